package server

// Faults on demand (docs/design.md, "Faults on demand"): a fault matches requests
// by API key, group, member id, client id, topic and partition, and
// changes what they get: an error code, a delay, no answer at all, or a
// closed connection. This file holds the registry and the rules of a
// fault's life (validation, counting, removal); fault_apply.go holds
// what a fault does to a request on the wire.
//
// Faults are for tests and lessons. None is kept on disk: a restart
// starts with none.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// Fault describes requests to match and what they get instead of their
// usual answer. The filters are ANDed; an empty one matches anything.
// Exactly one action is set: Err, Delay, Drop or Close.
type Fault struct {
	// Keys are the API keys matched (12 is Heartbeat); empty: every API
	// the broker serves.
	Keys []int16
	// Group matches requests naming this group id.
	Group string
	// Member matches requests naming this member id.
	Member string
	// ClientID matches requests whose header carries this client id.
	ClientID string
	// Topic and Partitions match requests naming this topic and, if
	// Partitions is not empty, one of these partitions of it (of any
	// topic, when Topic is empty). A request naming partitions, some
	// matched and some not, gets Err for the matched ones only.
	Topic      string
	Partitions []int32
	// Err answers this Kafka error code: per partition where the API has
	// partition codes (Produce, Fetch, ListOffsets, OffsetCommit,
	// OffsetFetch with a topic filter), otherwise the request's own code.
	// What it answers is not applied. APIs without a code of their own
	// (Metadata, CreateTopics, DescribeGroups, DeleteGroups,
	// ConsumerGroupDescribe) cannot be answered with one.
	Err int16
	// Delay holds the request this long, then handles it as usual. It
	// holds only its own connection: nothing is locked meanwhile.
	Delay time.Duration
	// Drop never answers the request, nor anything after it on its
	// connection: the requests behind it are read and discarded, never
	// applied, as if the answer and those after it were lost on the way.
	Drop bool
	// Close closes the connection instead of handling the request.
	Close bool
	// Count is how many requests the fault applies to: 0 once, N > 0 N
	// times, -1 until removed.
	Count int
}

// Limits of a fault.
const (
	// MaxFaults caps the faults listed at once, so that a script in a
	// loop cannot grow the registry without bound. A used-up fault that
	// is still listed gives its place up to a new one.
	MaxFaults = 1000
	// MaxFaultDelay caps Fault.Delay.
	MaxFaultDelay = 10 * time.Minute
	// maxFaultFilter caps Keys and Partitions, and the length of each
	// id a fault matches.
	maxFaultFilter = 1000
)

// Errors of Inject and Wait.
var (
	// ErrTooManyFaults is returned by Inject when MaxFaults are listed and
	// none is used up.
	ErrTooManyFaults = fmt.Errorf("server: %d faults are listed already: remove one first", MaxFaults)
	// ErrFaultRemoved is returned by Wait when the fault was removed
	// before its count was used up.
	ErrFaultRemoved = errors.New("server: the fault was removed")
)

// The actions, as logs and metrics name them.
const (
	actionErr   = "error"
	actionDelay = "delay"
	actionDrop  = "drop"
	actionClose = "close"
)

// Validate checks f: known API keys, an error code Kafka defines, one
// action, a delay and a count in range.
func (f *Fault) Validate() error {
	if len(f.Keys) > maxFaultFilter || len(f.Partitions) > maxFaultFilter {
		return fmt.Errorf("fault: at most %d keys and %d partitions", maxFaultFilter, maxFaultFilter)
	}
	for _, id := range []string{f.Group, f.Member, f.ClientID, f.Topic} {
		if len(id) > maxFaultFilter {
			return fmt.Errorf("fault: an id of %d bytes matches nothing (at most %d)", len(id), maxFaultFilter)
		}
	}
	for _, k := range f.Keys {
		if _, ok := protocol.VersionsFor(k); !ok {
			return fmt.Errorf("fault: API key %d is not one this broker serves", k)
		}
	}
	for _, p := range f.Partitions {
		if p < 0 {
			return fmt.Errorf("fault: partition %d is negative", p)
		}
	}
	actions := 0
	for _, set := range []bool{f.Err != 0, f.Delay != 0, f.Drop, f.Close} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return fmt.Errorf("fault: want exactly one action of err, delay, drop and close, got %d", actions)
	}
	if f.Err != 0 {
		if f.Err != kerr.UnknownServerError.Code && kerr.ErrorForCode(f.Err) == kerr.UnknownServerError {
			return fmt.Errorf("fault: %d is not a Kafka error code", f.Err)
		}
		for _, k := range f.Keys {
			if !hasErrorCode(kmsg.Key(k)) {
				return fmt.Errorf("fault: %s has no error code of its own to answer; a fault may delay, drop or close it", kmsg.NameForKey(k))
			}
		}
	}
	if f.Delay < 0 || f.Delay > MaxFaultDelay {
		return fmt.Errorf("fault: delay %v is not within 0 and %v", f.Delay, MaxFaultDelay)
	}
	if f.Count < -1 {
		return fmt.Errorf("fault: count %d: want 0 (once), N > 0, or -1 (until removed)", f.Count)
	}
	return nil
}

// action names f's action.
func (f *Fault) action() string {
	switch {
	case f.Err != 0:
		return actionErr
	case f.Delay != 0:
		return actionDelay
	case f.Drop:
		return actionDrop
	}
	return actionClose
}

// Faults is the registry of faults in force, and of the controls
// installed (control.go): everything that may change what a request
// gets. Its zero value is not usable; NewFaults makes one. Its methods
// are safe for concurrent use.
type Faults struct {
	// live counts the faults that can still match: with no control
	// installed, the request path's whole cost when it is zero is one
	// more atomic load (Faults.idle).
	live    atomic.Int32
	logger  *slog.Logger
	targets FaultTargets // nil: no warnings

	// controls are the installed controls in the order added
	// (control.go), nil when there are none; replaced whole, under mu,
	// and read without it by dispatch.
	controls atomic.Pointer[[]*ControlHandle]

	mu     sync.Mutex
	next   uint64                        // guarded by mu; the last id given (faults and controls)
	list   []*InjectedFault              // guarded by mu; in the order injected
	counts map[string]map[kmsg.Key]int64 // guarded by mu; requests faulted, by action and API
}

// NewFaults returns an empty registry that logs what its faults do to
// logger (nil: discard), and asks targets whether what a fault names
// exists (fault_targets.go; nil: it never warns).
func NewFaults(logger *slog.Logger, targets FaultTargets) *Faults {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Faults{logger: logger, targets: targets, counts: make(map[string]map[kmsg.Key]int64)}
}

// InjectedFault is one fault in the registry: the handle Inject returns.
type InjectedFault struct {
	fs   *Faults
	id   string
	spec Fault
	done chan struct{} // closed once used up or removed

	// guarded by fs.mu
	hits      int64
	remaining int // -1: until removed
	removed   bool
}

// FaultStatus is one listed fault as the registry reports it.
type FaultStatus struct {
	ID        string
	Fault     Fault
	Hits      int64
	Remaining int // -1: until removed
	// Warnings say what a fault in force that has not applied yet names
	// that does not exist now (InjectedFault.Warnings).
	Warnings []string
}

// Inject validates f and puts it in force. It returns the handle, whose
// ID names it in List and Remove. A fault that names a group, member or
// topic that does not exist is put in force all the same (it matches
// once a request names one), and a line at Warn says what is missing;
// the handle's Warnings says so too.
func (fs *Faults) Inject(f Fault) (*InjectedFault, error) {
	h, err := fs.inject(f)
	if err != nil {
		return nil, err
	}
	if warnings := faultWarnings(&h.spec, fs.targets); len(warnings) > 0 {
		fs.logger.Warn("fault names what does not exist", "fault", h.id, "warnings", warnings)
	}
	return h, nil
}

// inject puts f in force, under the registry's mutex.
func (fs *Faults) inject(f Fault) (*InjectedFault, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	f.Keys, f.Partitions = slices.Clone(f.Keys), slices.Clone(f.Partitions)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if len(fs.list) >= MaxFaults {
		i := slices.IndexFunc(fs.list, func(h *InjectedFault) bool { return h.remaining == 0 })
		if i < 0 {
			return nil, ErrTooManyFaults
		}
		fs.list = slices.Delete(fs.list, i, i+1)
	}
	fs.next++
	h := &InjectedFault{fs: fs, id: strconv.FormatUint(fs.next, 10), spec: f, done: make(chan struct{}), remaining: max(f.Count, 1)}
	if f.Count == -1 {
		h.remaining = -1
	}
	fs.list = append(fs.list, h)
	fs.live.Add(1)
	fs.logger.Info("fault injected", "fault", h.id, "action", f.action(), "keys", f.Keys, "group", f.Group,
		"member", f.Member, "client_id", f.ClientID, "topic", f.Topic, "partitions", f.Partitions, "count", f.Count)
	return h, nil
}

// List returns the listed faults in the order they were injected: those
// in force, with their warnings, and those used up but not removed.
func (fs *Faults) List() []FaultStatus {
	fs.mu.Lock()
	out := make([]FaultStatus, 0, len(fs.list))
	for _, h := range fs.list {
		out = append(out, FaultStatus{ID: h.id, Fault: h.spec, Hits: h.hits, Remaining: h.remaining})
	}
	fs.mu.Unlock()
	// The targets take the coordinator's lock: never under ours.
	for i := range out {
		if out[i].Remaining != 0 && out[i].Hits == 0 {
			out[i].Warnings = faultWarnings(&out[i].Fault, fs.targets)
		}
	}
	return out
}

// Remove removes the fault named id, and reports whether it was listed.
func (fs *Faults) Remove(id string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	i := slices.IndexFunc(fs.list, func(h *InjectedFault) bool { return h.id == id })
	if i < 0 {
		return false
	}
	fs.removeLocked(fs.list[i], i)
	return true
}

// removeLocked takes h, at index i of the list, out of the registry.
func (fs *Faults) removeLocked(h *InjectedFault, i int) {
	fs.list = slices.Delete(fs.list, i, i+1)
	h.removed = true
	if h.remaining != 0 {
		fs.live.Add(-1)
		close(h.done)
	}
	fs.logger.Info("fault removed", "fault", h.id, "hits", h.hits)
}

// Counts returns how many requests faults have changed, by action and
// API name.
func (fs *Faults) Counts() map[string]map[string]int64 {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make(map[string]map[string]int64, len(fs.counts))
	for action, byKey := range fs.counts {
		out[action] = make(map[string]int64, len(byKey))
		for k, n := range byKey {
			out[action][kmsg.NameForKey(int16(k))] = n
		}
	}
	return out
}

// Live returns how many faults can still match a request.
func (fs *Faults) Live() int { return int(fs.live.Load()) }

// claim returns the first fault in force that matches a request of key
// from clientID naming at, with one taken from its count, or nil.
func (fs *Faults) claim(key kmsg.Key, clientID string, at *faultTarget) *InjectedFault {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, h := range fs.list {
		if h.remaining == 0 || !h.spec.matches(key, clientID, at) {
			continue
		}
		h.hits++
		if h.remaining > 0 {
			h.remaining--
			if h.remaining == 0 {
				fs.live.Add(-1)
				close(h.done)
			}
		}
		action := h.spec.action()
		if fs.counts[action] == nil {
			fs.counts[action] = make(map[kmsg.Key]int64)
		}
		fs.counts[action][key]++
		return h
	}
	return nil
}

// ID returns the fault's id, the one List and Remove name it by.
func (h *InjectedFault) ID() string { return h.id }

// Fault returns what the fault matches and does.
func (h *InjectedFault) Fault() Fault { return h.spec }

// Hits returns how many requests the fault has applied to.
func (h *InjectedFault) Hits() int64 {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	return h.hits
}

// Warnings returns what the fault names that does not exist now, one
// sentence each: a group, a member id in its group (or in any group when
// it names none), a topic, a partition past the topic's count. A fault
// may be set before its target exists (a test that knows the member id
// a client will get); until the target appears it matches nothing. Nil
// when everything it names exists, once the fault has applied to a
// request (what it names is real enough: a member the expiry step
// removed still sends its requests, as a zombie does), and once it is
// used up or removed.
func (h *InjectedFault) Warnings() []string {
	h.fs.mu.Lock()
	quiet := h.removed || h.remaining == 0 || h.hits > 0
	h.fs.mu.Unlock()
	if quiet {
		return nil
	}
	return faultWarnings(&h.spec, h.fs.targets)
}

// Remaining returns how many more requests the fault applies to: -1
// until removed, 0 once used up or removed.
func (h *InjectedFault) Remaining() int {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.removed {
		return 0
	}
	return h.remaining
}

// Wait blocks until the fault's count is used up, and returns nil; or
// ErrFaultRemoved if it was removed first, or ctx's error.
func (h *InjectedFault) Wait(ctx context.Context) error {
	select {
	case <-h.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if h.remaining != 0 {
		return ErrFaultRemoved
	}
	return nil
}

// Remove takes the fault out of force and off the list. It is
// idempotent.
func (h *InjectedFault) Remove() {
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	if i := slices.Index(h.fs.list, h); i >= 0 {
		h.fs.removeLocked(h, i)
	}
}
