package server

// InitProducerId (key 22), versions 0-4.
//
// An idempotent producer (no transactional id) gets a producer id never
// handed out before, even across restarts, and epoch 0, as Kafka's
// transaction coordinator answers a null transactional id whatever id and
// epoch the request carries (v3+, KIP-360). v1 and v3 add nothing we use;
// v2 is flexible; v4 (KIP-588) is what kgo sends. A transactional id gets
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED: transactions are out of scope,
// and that code is not retriable, so the producer reports it at once
// instead of retrying (docs/behavior-matrix.md).

import (
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/records"
)

func (s *Server) handleInitProducerID(r *request, req *kmsg.InitProducerIDRequest) kmsg.Response {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		err := fmt.Errorf("%w: transactional id %q", records.ErrTransactional, *req.TransactionalID)
		r.logger.Warn("transactional producer refused: transactions are not supported", "transactional_id", *req.TransactionalID, "client", r.clientID)
		r.setCode(&resp.ErrorCode, s.code(err))
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
