// Command minibroker runs the broker and the chapter's labs.
//
//	minibroker serve [flags]                  serve the Kafka protocol
//	minibroker lab NAME [--broker ADDR]       the chapter's experiments over a real socket
//	minibroker offsets [--data-dir DIR]       the committed offsets a data dir holds now
//	minibroker apis                           the APIs served, as the README's markdown table
package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/minibroker/minibroker/internal/interrupt"
	"github.com/minibroker/minibroker/protocol"
)

const usage = `usage:
  minibroker serve [flags]                  serve the Kafka protocol
  minibroker lab NAME [--broker ADDR]       run one of the chapter's labs
  minibroker offsets [--data-dir DIR]       print the committed offsets a data dir holds now
  minibroker apis                           print the APIs served and their versions (markdown)

Run "minibroker serve -h" for the serve flags. The comparison with kfake
is a program of its own: go run ./cmd/minicompare.
`

func main() {
	// The first SIGINT or SIGTERM cancels ctx (serve shuts down, a lab
	// cleans up); a second one forces exit.
	ctx, stop := interrupt.Context(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one command line and returns the process exit status: 0 on
// success, 2 for a usage error, 1 for anything else.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stderr)
	case "lab":
		return lab(ctx, args[1:], stdout, stderr)
	case "offsets":
		return offsetsCmd(args[1:], stdout, stderr)
	case "apis":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "minibroker apis: unexpected argument %q\n", args[1])
			return 2
		}
		fmt.Fprint(stdout, protocol.APITable())
		return 0
	case "compare":
		fmt.Fprintln(stderr, "minibroker compare: the comparison with kfake is a program of its own, so that minibroker does not link kfake: go run ./cmd/minicompare [--broker ADDR]")
		return 2
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "minibroker: unknown command %q\n%s", args[0], usage)
		return 2
	}
}
