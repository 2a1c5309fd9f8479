package testutil

import (
	"os"
	"os/exec"
	"testing"
)

const helloPkg = "github.com/minibroker/minibroker/internal/testutil/testdata/hello"

// TestBuildMainOncePerPackage: the second call returns the same
// executable without building again, and the executable runs.
func TestBuildMainOncePerPackage(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	bin := BuildMain(t, helloPkg)
	first, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if again := BuildMain(t, helloPkg); again != bin {
		t.Fatalf("second BuildMain = %s, want %s", again, bin)
	}
	second, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !first.ModTime().Equal(second.ModTime()) {
		t.Errorf("rebuilt: modified %v, then %v", first.ModTime(), second.ModTime())
	}
	out, err := exec.Command(bin).Output()
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != "hello\n" {
		t.Errorf("output %q, want %q", out, "hello\n")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBuilds()
	os.Exit(code)
}
