package lab

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLabIdentity pins the two questions over the wire: a static member's
// restart keeps its partitions at the same generation, the zombie of its
// previous run is FENCED_INSTANCE_ID on heartbeat and commit at the
// current generation, and a dynamic member's restart costs two
// generations, after which the static member is ILLEGAL_GENERATION.
func TestLabIdentity(t *testing.T) {
	t.Parallel()
	runGolden(t, "identity")
	out := golden(t, "identity")
	require.Contains(t, out, "  < JoinGroup v9 NONE generation=2 member=lab-identity-s-000003 leader=lab-identity-s-000003")
	require.Contains(t, out, "  > Heartbeat v4 member=lab-identity-s-000001 instance=lab-identity-s generation=2\n  < Heartbeat v4 FENCED_INSTANCE_ID\n")
	require.Contains(t, out, "  < OffsetCommit v9 lab-identity-orders-0=FENCED_INSTANCE_ID\n")
	require.Contains(t, out, "  > Heartbeat v4 member=lab-identity-s-000003 instance=lab-identity-s generation=2\n  < Heartbeat v4 ILLEGAL_GENERATION\n")
	require.Contains(t, out, "who are you?")
	require.Contains(t, out, "which assignment version?")
}

// TestLabIdentityReadmeExcerpt: the README's excerpts of the identity
// lab's output are the golden file's lines.
func TestLabIdentityReadmeExcerpt(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	out := golden(t, "identity")
	_, rest, ok := strings.Cut(string(readme), "`lab identity` asks")
	require.True(t, ok, "the README's lab section describes lab identity")
	blocks := 0
	for _, block := range strings.Split(rest, "```text\n")[1:] {
		excerpt, _, _ := strings.Cut(block, "```")
		if !strings.Contains(excerpt, "lab-identity") && !strings.Contains(excerpt, "Two questions") {
			break
		}
		require.Contains(t, out, excerpt)
		blocks++
	}
	require.Equal(t, 2, blocks)
}
