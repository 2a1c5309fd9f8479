package compare

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/tools/lab"
)

// Topics is the topic catalog every scenario assumes: the chapter's orders
// with four partitions, and payments with one.
func Topics() map[string]int32 { return lab.DefaultTopics() }

// expiryInterval is how often the in-process minibroker runs its expiry
// step: often enough that the session-expiry scenario ends soon after the
// session does.
const expiryInterval = 10 * time.Millisecond

// minSessionTimeout is the smallest session both in-process brokers accept,
// so the session-expiry scenario can use a short session.
const minSessionTimeout = 10 * time.Millisecond

// StartMinibroker starts an in-process minibroker on the real clock, with
// the expiry step on a short ticker, for the scenarios. Close it when done.
func StartMinibroker(ctx context.Context) (*broker.Broker, error) {
	return broker.Start(ctx, broker.Config{ExpiryInterval: expiryInterval, GroupSettings: broker.GroupSettings{MinSessionTimeout: minSessionTimeout}, Topics: Topics()})
}

// StartKfake starts an in-process kfake cluster of one broker with the
// scenarios' topics and a short minimum session timeout. It returns the
// broker's address and a function that stops the cluster.
func StartKfake() (addr string, stop func(), err error) {
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.GroupMinSessionTimeout(minSessionTimeout),
	}
	for name, n := range Topics() {
		opts = append(opts, kfake.SeedTopics(n, name))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return "", nil, fmt.Errorf("compare: start kfake: %w", err)
	}
	addrs := c.ListenAddrs()
	if len(addrs) != 1 {
		c.Close()
		return "", nil, fmt.Errorf("compare: kfake listens on %d addresses, want 1", len(addrs))
	}
	return addrs[0], c.Close, nil
}
