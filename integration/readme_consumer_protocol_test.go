package integration

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/minibroker/minibroker/internal/testutil"
)

// kgoMemberID matches a member id kgo makes for the consumer protocol: 16
// random bytes, base64 (URL alphabet).
var kgoMemberID = regexp.MustCompile(`\b[A-Za-z0-9_-]{22}==`)

// TestReadmeHelloGroupConsumerProtocol runs "go run
// ./examples/hello-group --consumer-protocol" as "A group forms" shows
// it: it prints the README's line (its random member id aside), and the
// page's group is a consumer group.
func TestReadmeHelloGroupConsumerProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	b := startWalkBroker(t, testutil.BuildMain(t, "github.com/minibroker/minibroker/cmd/minibroker"))
	shown := readmeTranscript(t, "go run ./examples/hello-group --consumer-protocol").lines
	require.Len(t, shown, 1)
	require.Regexp(t, kgoMemberID, shown[0], "the README shows a member id of kgo's making")
	out, code := runProgram(t, testutil.BuildMain(t, "github.com/minibroker/minibroker/examples/hello-group"), nil, "--broker", b.Kafka, "--consumer-protocol")
	require.Zero(t, code, out)
	require.Equal(t, kgoMemberID.ReplaceAllString(shown[0], "ID"), kgoMemberID.ReplaceAllString(strings.TrimSuffix(out, "\n"), "ID"))
	var g struct {
		Type string `json:"type"`
	}
	adminGetJSON(t, b.HTTP+"/v1/groups/hello", &g)
	require.Equal(t, "consumer", g.Type)
}
