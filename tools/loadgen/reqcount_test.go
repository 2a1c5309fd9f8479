package loadgen

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduceCounterCountsAnsweredProduce: only Produce responses read
// without error count.
func TestProduceCounterCountsAnsweredProduce(t *testing.T) {
	var c produceCounter
	c.OnBrokerRead(kgo.BrokerMetadata{}, int16(kmsg.Produce), 100, 0, 0, nil)
	c.OnBrokerRead(kgo.BrokerMetadata{}, int16(kmsg.Produce), 100, 0, 0, nil)
	c.OnBrokerRead(kgo.BrokerMetadata{}, int16(kmsg.Produce), 0, 0, 0, errors.New("connection reset"))
	c.OnBrokerRead(kgo.BrokerMetadata{}, int16(kmsg.Metadata), 100, 0, 0, nil)
	require.Equal(t, int64(2), c.count())
}
