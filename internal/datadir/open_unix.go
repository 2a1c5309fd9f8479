//go:build unix

package datadir

import (
	"errors"
	"syscall"
)

// noFollow and nonBlock are added to every open: the last element of the
// path is never followed if it is a symbolic link, and opening a FIFO
// returns at once. Neither changes how a regular file reads or writes.
const (
	noFollow = syscall.O_NOFOLLOW
	nonBlock = syscall.O_NONBLOCK
)

// isLoop reports whether err is what O_NOFOLLOW returns for a symbolic
// link: ELOOP (Linux, macOS), EMLINK (FreeBSD, DragonFly, NetBSD: EFTYPE).
func isLoop(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
