package compare

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/broker"
)

// StartETLBrokers starts an in-process minibroker and kfake for the ETL
// comparison, both telling consumer-protocol members to heartbeat every
// heartbeat (as classic members are told to by ETLConfig), and returns
// their addresses and a function that stops both. The topics are the
// rows' own, created by RunETL. Only the function stops them, not the end
// of ctx: a run that ends early (interrupted) must still close its
// clients against brokers that answer, or kgo retries their writes for
// ever.
func StartETLBrokers(ctx context.Context, heartbeat time.Duration) (map[Side]string, func(), error) {
	b, err := broker.Start(context.WithoutCancel(ctx), broker.Config{ExpiryInterval: expiryInterval, GroupSettings: broker.GroupSettings{
		MinSessionTimeout: minSessionTimeout, ConsumerSessionTimeout: etlSessionTimeout, ConsumerHeartbeatInterval: heartbeat}})
	if err != nil {
		return nil, nil, err
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(minSessionTimeout),
		kfake.BrokerConfigs(map[string]string{
			"group.consumer.heartbeat.interval.ms": strconv.FormatInt(heartbeat.Milliseconds(), 10),
			"group.consumer.session.timeout.ms":    strconv.FormatInt(etlSessionTimeout.Milliseconds(), 10),
		}))
	if err != nil {
		b.Close()
		return nil, nil, fmt.Errorf("compare: start kfake: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		b.Close()
		return nil, nil, fmt.Errorf("compare: kfake listens on %d addresses, want 1", len(addrs))
	}
	stop := func() {
		c.Close()
		b.Close()
	}
	return map[Side]string{Minibroker: b.Addr(), Kfake: addrs[0]}, stop, nil
}
