package lab

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabExpiry pins exercise 3: with a 100 ms session the expiry step at
// exactly 100 ms removes nobody, and at 101 ms removes both members and
// leaves the group Empty.
func TestLabExpiry(t *testing.T) {
	t.Parallel()
	runGolden(t, "expiry")
	out := golden(t, "expiry")
	require.Contains(t, out, "  clock: 100 ms; expiry step (in process): removed (none)\n")
	require.Contains(t, out, "  clock: 101 ms; expiry step (in process): removed lab-000001, lab-000002\n")
	require.Contains(t, out, "state=Empty members=(none)\n")
}
