package protocol

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// APITable renders the version table as the markdown table the README
// shows under "APIs served": one row per API, by key. A test checks that
// the README holds exactly this table, so an API added here fails it
// until the README is updated (`minibroker apis` prints it).
func APITable() string {
	var b strings.Builder
	b.WriteString("| API | key | versions |\n|---|---:|---|\n")
	for _, v := range supportedVersions {
		versions := fmt.Sprintf("%d-%d", v.Min, v.Max)
		if v.Min == v.Max {
			versions = fmt.Sprint(v.Min)
		}
		fmt.Fprintf(&b, "| %s | %d | %s |\n", kmsg.NameForKey(v.Key), v.Key, versions)
	}
	return b.String()
}
