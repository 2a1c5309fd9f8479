package broker

import "github.com/minibroker/minibroker/server"

// Fault describes requests to match and what they get instead of their
// usual answer: an error code, a delay, no answer, or a closed
// connection (server.Fault documents each field). Faults are for tests
// and lessons; none survives a restart.
type Fault = server.Fault

// InjectedFault is a fault in force: Hits counts the requests it applied
// to, Wait blocks until its Count is used up, Remove ends it, and
// Warnings says what it names that does not exist now.
type InjectedFault = server.InjectedFault

// InjectFault validates f and puts it in force on every connection, for
// the requests its filters match, until its Count is used up or it is
// removed. A fault on one member's heartbeats (Keys 12, Group, Member,
// Drop, Count -1) makes a zombie: the client keeps fetching while its
// lease runs out, and after Advance and Expire its next commit is
// fenced.
//
// A fault that names a group, member id or topic the broker does not
// have now is put in force all the same, since a test may set it before
// its target exists (a member id it knows the client will get: the
// client id and a sequence); it matches nothing until then. The returned
// fault's Warnings says what is missing (nil when everything it names
// exists), and the broker logs it at Warn:
//
//	f, err := b.InjectFault(broker.Fault{Keys: []int16{12}, Group: "billing", Member: id, Drop: true, Count: -1})
//	if w := f.Warnings(); w != nil {
//		t.Fatalf("the fault matches nothing: %v", w)
//	}
func (b *Broker) InjectFault(f Fault) (*InjectedFault, error) {
	return b.faults.Inject(f)
}

// Faults returns the faults listed now, in force or used up, in the
// order they were injected.
func (b *Broker) Faults() []server.FaultStatus { return b.faults.List() }
