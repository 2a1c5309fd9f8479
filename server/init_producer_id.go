package server

// InitProducerId (key 22), versions 0-4.
//
// An idempotent producer (no transactional id) gets a producer id never
// handed out before, even across restarts, and epoch 0, as Kafka's
// transaction coordinator answers a null transactional id whatever id and
// epoch the request carries (v3+, KIP-360). v1 and v3 add nothing we use;
// v2 is flexible; v4 (KIP-588) is what kgo sends. A transactional id
// goes to the transaction coordinator (package txn): the same id gets the
// same producer id at epoch + 1, fencing older epochs, after aborting an
// open transaction; a timeout over --transaction-max-timeout is
// INVALID_TRANSACTION_TIMEOUT; an empty id INVALID_REQUEST. With v3+ a
// producer that names its current producer id and epoch (KIP-360) must
// name the id's current or last one, else PRODUCER_FENCED.

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleInitProducerID(r *request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		timeout := time.Duration(req.TransactionTimeoutMillis) * time.Millisecond
		id, epoch, err := s.txns.InitProducerID(*req.TransactionalID, timeout, req.ProducerID, req.ProducerEpoch)
		if err != nil {
			r.setCode(&resp.ErrorCode, s.code(err))
			return resp
		}
		resp.ProducerID, resp.ProducerEpoch = id, epoch
		return resp
	}
	id, epoch, err := s.log.InitProducerID()
	if err != nil {
		if n, ok := s.pidErrors.allow(time.Now()); ok {
			r.logger.Error("handing out a producer id failed", "err", err, "suppressed", n)
		}
		r.setCode(&resp.ErrorCode, s.code(err))
		return resp
	}
	resp.ProducerID, resp.ProducerEpoch = id, epoch
	return resp
}

// everyInterval lets one log line of a kind through per interval and
// counts the ones it holds back: a failing InitProducerId answered to a
// retrying client costs a line a second, not one per request.
type everyInterval struct {
	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// logInterval is the least time between two lines of one kind.
const logInterval = time.Second

// allow reports whether a line may be logged at now, and how many were
// held back since the last one.
func (e *everyInterval) allow(now time.Time) (suppressed int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.last.IsZero() && now.Sub(e.last) < logInterval {
		e.suppressed++
		return 0, false
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	return n, true
}
