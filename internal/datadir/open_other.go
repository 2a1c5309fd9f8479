//go:build !unix

package datadir

// Without O_NOFOLLOW, OpenFile refuses a symbolic link it sees in an Lstat
// before the open; one swapped in between would be followed. The broker's
// supported platforms are unix.
const (
	noFollow = 0
	nonBlock = 0
)

func isLoop(error) bool { return false }
