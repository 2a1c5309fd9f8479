package loadgen

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// produceCounter is a kgo hook that counts the Produce responses the
// client read: the requests a server answered, for its CPU per request.
type produceCounter struct{ n atomic.Int64 }

var _ kgo.HookBrokerRead = (*produceCounter)(nil)

// OnBrokerRead implements kgo.HookBrokerRead.
func (c *produceCounter) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Produce) && err == nil {
		c.n.Add(1)
	}
}

// count returns the responses read so far.
func (c *produceCounter) count() int64 { return c.n.Load() }
