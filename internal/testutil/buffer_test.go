package testutil

import (
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrentWriteAndRead(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			b.Write([]byte("line\n"))
		}
	})
	wg.Go(func() {
		for range 100 {
			_ = b.String()
		}
	})
	wg.Wait()
	if n := strings.Count(b.String(), "line\n"); n != 100 {
		t.Fatalf("%d lines", n)
	}
}
