package interrupt

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSignalCancelsWithItsCause: SIGTERM sent to the process cancels the
// context with the signal as its cause, which is ErrInterrupted, and the
// exit code is 143; a plain cancel is an interrupt with 130; a deadline
// is none. Not parallel: it signals the test process itself.
func TestSignalCancelsWithItsCause(t *testing.T) {
	ctx, stop := Context(t.Context())
	defer stop()
	require.NoError(t, syscall.Kill(syscall.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	require.ErrorIs(t, context.Cause(ctx), ErrInterrupted)
	require.Equal(t, "interrupted (terminated)", context.Cause(ctx).Error())
	require.True(t, Interrupted(ctx))
	require.Equal(t, 143, ExitCode(ctx))

	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	require.True(t, Interrupted(canceled))
	require.Equal(t, 130, ExitCode(canceled))

	expired, cancel := context.WithTimeout(t.Context(), 0)
	defer cancel()
	<-expired.Done()
	require.False(t, Interrupted(expired))
	require.False(t, Interrupted(t.Context()))
}
