// Command quiet-members joins members to a group, each with the session
// timeout given, and then keeps quiet: no heartbeat, no commit, nothing
// until Ctrl-C. It is the chapter's exercise 3 from the client side. A
// kgo group consumer cannot play it: it heartbeats on its own timer, and
// every heartbeat renews its lease, so against a manual clock its lease
// never ends where the exercise says it should. These members send one
// JoinGroup and one SyncGroup each, so each lease ends exactly one
// session timeout after its join, on the broker's clock.
//
// With a broker on a manual clock (see the README):
//
//	go run ./examples/quiet-members --broker 127.0.0.1:9093
//
// It prints each member as it joins, "member
// quiet-members-mx54kzp2-000001 generation 1 session 100ms" (the member id
// starts with its client id: the program's name and its start time in
// base 36, so each run's members are its own), then waits. Ctrl-C exits without leaving the group:
// the members stay until the broker's expiry step removes them.
//
// Flags: --broker (default 127.0.0.1:9092), --group (default exercise3),
// --topic (default orders), --members (default 2), --session (default
// 100ms).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	broker := flag.String("broker", "127.0.0.1:9092", "minibroker address, HOST:PORT")
	group := flag.String("group", "exercise3", "consumer group")
	topic := flag.String("topic", "orders", "topic the members subscribe to")
	members := flag.Int("members", 2, "how many members join")
	session := flag.Duration("session", 100*time.Millisecond, "each member's session timeout; a duration with a unit: 100ms, 2s")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cl, err := join(ctx, config{*broker, *group, *topic, *members, *session}, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "quiet-members:", err)
		os.Exit(1)
	}
	defer cl.Close()
	fmt.Println("quiet until Ctrl-C")
	<-ctx.Done()
}

// config is what the flags set.
type config struct {
	broker, group, topic string
	members              int
	session              time.Duration
}

// join joins cfg.members members one after another, each completing its
// join and sync, and prints each. It returns the client they spoke
// through; closing it sends nothing to the group.
func join(ctx context.Context, cfg config, out io.Writer) (*kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.broker),
		// One client id per instance (its start time in base 36): member
		// ids start with it, and the live page tells instances apart.
		kgo.ClientID("quiet-members-"+strconv.FormatInt(time.Now().UnixMilli(), 36)))
	if err != nil {
		return nil, err
	}
	for range cfg.members {
		id, generation, err := joinOne(ctx, cl, cfg)
		if err != nil {
			cl.Close()
			return nil, err
		}
		fmt.Fprintf(out, "member %s generation %d session %v\n", id, generation, cfg.session)
	}
	return cl, nil
}

// joinOne joins one new member and syncs it.
func joinOne(ctx context.Context, cl *kgo.Client, cfg config) (string, int32, error) {
	meta := kmsg.NewConsumerMemberMetadata()
	meta.Topics = []string{cfg.topic}
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = cfg.group
	req.SessionTimeoutMillis = int32(cfg.session / time.Millisecond)
	req.RebalanceTimeoutMillis = req.SessionTimeoutMillis
	req.ProtocolType = "consumer"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin", Metadata: meta.AppendTo(nil)}}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return "", 0, err
		}
		err = kerr.ErrorForCode(resp.ErrorCode)
		if errors.Is(err, kerr.MemberIDRequired) && req.MemberID == "" {
			req.MemberID = resp.MemberID // the join asks again with its id
			continue
		}
		if err != nil {
			return "", 0, fmt.Errorf("JoinGroup: %w", err)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group, sync.MemberID, sync.Generation = cfg.group, resp.MemberID, resp.Generation
		sync.ProtocolType, sync.Protocol = resp.ProtocolType, resp.Protocol
		sresp, err := sync.RequestWith(ctx, cl)
		if err != nil {
			return "", 0, err
		}
		if err := kerr.ErrorForCode(sresp.ErrorCode); err != nil {
			return "", 0, fmt.Errorf("SyncGroup: %w", err)
		}
		return resp.MemberID, resp.Generation, nil
	}
}
