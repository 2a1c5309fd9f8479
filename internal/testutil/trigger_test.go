package testutil

import (
	"regexp"
	"testing"
)

// TestTriggerFiresOnceWhenItsOutputMatches: fire runs at the write that
// completes the match, once, and everything written is kept.
func TestTriggerFiresOnceWhenItsOutputMatches(t *testing.T) {
	t.Parallel()
	fired := 0
	tr := NewTrigger(regexp.MustCompile(`\n2\. `), func() { fired++ })
	for _, s := range []string{"1. one\n", "2", ". two\n", "2. again\n"} {
		if _, err := tr.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
		if s == "2" && fired != 0 {
			t.Fatal("fired before the match was complete")
		}
	}
	if fired != 1 {
		t.Fatalf("fired %d times, want 1", fired)
	}
	if got := tr.String(); got != "1. one\n2. two\n2. again\n" {
		t.Fatalf("kept %q", got)
	}
}
