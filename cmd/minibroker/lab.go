package main

import (
	"context"
	"fmt"
	"io"
)

// lab runs one of the chapter's labs.
func lab(_ context.Context, args []string, _ io.Writer, stderr io.Writer) int {
	fmt.Fprintf(stderr, "minibroker lab: not yet available (%v)\n", args)
	return 2
}
