// Package interrupt is how the command-line tools stop on Ctrl-C: the
// first SIGINT or SIGTERM cancels their context, naming the signal as the
// cause, so that a tool can say it was interrupted, clean up what its run
// made, and exit with the status a shell reports for that signal
// (128+n: 130 for SIGINT, 143 for SIGTERM), as Kafka's command-line
// tools do (the JVM exits so on a signal). A second signal kills the
// process at once.
package interrupt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// ErrInterrupted is the cause of a context Context canceled, and what a
// tool's run returns when it stopped because of it (errors.Is).
var ErrInterrupted = errors.New("interrupted")

// Signal is the cause of a context canceled by a signal; it wraps
// ErrInterrupted.
type Signal struct{ os.Signal }

// Error names the signal.
func (s Signal) Error() string { return fmt.Sprintf("interrupted (%v)", s.Signal) }

// Unwrap makes a Signal ErrInterrupted.
func (s Signal) Unwrap() error { return ErrInterrupted }

// Context returns a context canceled, with a Signal as its cause, at the
// first SIGINT or SIGTERM. After that first signal the default handling
// is back, so a second one ends the process. stop releases the signals.
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			signal.Stop(ch)
			cancel(Signal{sig})
		case <-done:
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			signal.Stop(ch)
			close(done)
		})
		cancel(context.Canceled)
	}
}

// Interrupted reports whether ctx ended because the run was interrupted:
// a signal (Context), or a plain cancel by whoever started the run (a
// test), and not a deadline.
func Interrupted(ctx context.Context) bool {
	return ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// ExitCode is the status a tool interrupted through ctx exits with: 128
// plus the signal's number, as a shell reports a process a signal ended;
// 130 (SIGINT's) when ctx was canceled without a signal.
func ExitCode(ctx context.Context) int {
	var sig Signal
	if errors.As(context.Cause(ctx), &sig) {
		if s, ok := sig.Signal.(syscall.Signal); ok {
			return 128 + int(s)
		}
	}
	return 128 + int(syscall.SIGINT)
}
