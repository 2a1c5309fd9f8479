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

// ControlRequest is one request as a control sees it: its API key,
// version, client id, the client's address and the decoded kmsg request
// (server.ControlRequest documents each).
type ControlRequest = server.ControlRequest

// ControlFunc decides what one request gets: nil, nil lets it through; a
// response of the request's API answers it, and nothing of the request
// is applied; an error closes the connection, nothing applied
// (server.Control documents the rules).
type ControlFunc = server.Control

// ControlHandle is an installed control: Remove takes it out, Calls
// counts the requests it was called for.
type ControlHandle = server.ControlHandle

// Control installs fn for every request the broker handles, after the
// controls already installed, as kfake's Cluster.Control: the
// programmatic form of a fault, for a test in the broker's process.
// Controls run before faults; a request a control answers meets none.
// fn is called on the request's connection goroutine, from several at
// once, until Remove; it may block (watching the request's Context) and
// may remove itself. A control lives in memory only, like a fault.
func (b *Broker) Control(fn ControlFunc) (*ControlHandle, error) {
	return b.faults.AddControl(-1, fn)
}

// ControlKey is Control for the requests of one API (kmsg.Heartbeat is
// 12), as kfake's Cluster.ControlKey. A key the broker does not serve is
// an error.
func (b *Broker) ControlKey(key int16, fn ControlFunc) (*ControlHandle, error) {
	return b.faults.AddControl(key, fn)
}
