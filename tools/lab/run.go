package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/minibroker/minibroker/broker"
)

// ErrUnknownLab is returned by Run for a name that is not a lab.
var ErrUnknownLab = errors.New("unknown lab")

// Names returns the labs, in the order `make lab` runs them.
func Names() []string {
	return []string{"rebalance", "fencing", "expiry", "rebalance-848", "fencing-848"}
}

// Group returns the group id a lab uses against a fresh in-process broker.
func Group(name string) string { return "lab-" + name }

// Run runs the named lab and writes its output to w.
//
// With addr "" it starts an in-process broker on a manual clock with a
// temporary data directory, runs the lab against it and stops it: the
// output is then the same bytes on every run. With an address it runs
// against that broker, in a group whose id ends with a suffix unique to the
// run (so earlier runs cannot interfere), after making sure topic orders
// exists with 4 partitions; member ids then depend on the broker's
// history. The expiry lab needs the in-process broker (ErrNeedsInProcess).
func Run(ctx context.Context, name string, w io.Writer, addr string) error {
	if !slices.Contains(Names(), name) {
		return fmt.Errorf("%w %q", ErrUnknownLab, name)
	}
	if addr != "" {
		if name == "expiry" {
			return ErrNeedsInProcess
		}
		if err := EnsureTopics(ctx, addr, map[string]int32{"orders": 4}); err != nil {
			return err
		}
		return runOn(ctx, name, w, nil, addr, Group(name)+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	}
	b, err := StartBroker(ctx)
	if err != nil {
		return err
	}
	err = runOn(ctx, name, w, b, b.Addr(), Group(name))
	return errors.Join(err, b.Close())
}

// runOn runs one lab; b is nil for a broker in another process.
func runOn(ctx context.Context, name string, w io.Writer, b *broker.Broker, addr, group string) error {
	switch name {
	case "rebalance":
		return Rebalance(ctx, w, addr, group)
	case "fencing":
		return Fencing(ctx, w, addr, group)
	case "rebalance-848":
		return Rebalance848(ctx, w, addr, group)
	case "fencing-848":
		return Fencing848(ctx, w, addr, group)
	default:
		return Expiry(ctx, w, b, group)
	}
}
