package embedded

import (
	"os/exec"
	"strings"
	"testing"
)

// A test that embeds a broker without the admin API links neither the
// admin package nor Prometheus and protobuf (the admin side is
// broker/adminapi, which this module does not import).
func TestEmbeddingLinksNoPrometheus(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	linked := map[string]bool{}
	for _, dep := range deps {
		linked[dep] = true
		if strings.HasPrefix(dep, "github.com/prometheus/") || strings.HasPrefix(dep, "google.golang.org/protobuf/") ||
			dep == "github.com/minibroker/minibroker/admin" || dep == "github.com/minibroker/minibroker/broker/adminapi" {
			t.Errorf("the embedding test links %s", dep)
		}
	}
	if !linked["github.com/minibroker/minibroker/broker"] || !linked["github.com/twmb/franz-go/pkg/kgo"] {
		t.Fatalf("go list did not list the test's own imports:\n%s", out)
	}
}
