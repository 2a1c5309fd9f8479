package datadir

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// lockChildEnv names the directory TestLockChild locks.
const lockChildEnv = "DATADIR_LOCK_CHILD_DIR"

// TestLockChild is the process the lock tests start: it locks the
// directory, says "locked <pid>", and holds the lock until its stdin
// closes, then releases it and says "released". Tests kill it instead.
func TestLockChild(t *testing.T) {
	dir := os.Getenv(lockChildEnv)
	if dir == "" {
		t.Skip("started by TestLockHeldByAnotherProcess")
	}
	d, err := Lock(dir)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Println("locked", os.Getpid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	if err := d.Release(); err != nil {
		fmt.Println("error", err)
		os.Exit(4)
	}
	fmt.Println("released")
	os.Exit(0)
}

// lockChild starts TestLockChild on dir and returns once it holds the lock.
func lockChild(t *testing.T, dir string) (cmd *exec.Cmd, stdin io.WriteCloser, lines *bufio.Scanner) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^TestLockChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), lockChildEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines = bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the child says it locked")
	require.Equal(t, "locked "+strconv.Itoa(cmd.Process.Pid), lines.Text())
	return cmd, stdin, lines
}

// lockSoon runs Lock(dir) and fails the test if it does not return within
// a generous deadline: a busy lock must fail at once, never wait.
func lockSoon(t *testing.T, dir string) (*Dir, error) {
	t.Helper()
	type result struct {
		d   *Dir
		err error
	}
	done := make(chan result, 1)
	go func() {
		d, err := Lock(dir)
		done <- result{d, err}
	}()
	select {
	case r := <-done:
		if r.d != nil {
			t.Cleanup(func() { _ = r.d.Release() })
		}
		return r.d, r.err
	case <-time.After(10 * time.Second):
		t.Fatal("Lock blocked")
		return nil, nil
	}
}

// TestLockHeldByAnotherProcess: while a child process holds the lock, Lock
// fails at once naming the directory, the child's pid and the lock file;
// once the child is gone, by SIGKILL or by a clean exit, the lock is free.
func TestLockHeldByAnotherProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	for _, ending := range []string{"SIGKILL", "release and exit"} {
		t.Run(ending, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cmd, stdin, lines := lockChild(t, dir)

			d, err := lockSoon(t, dir)
			require.ErrorIs(t, err, ErrInUse)
			require.Nil(t, d)
			want := fmt.Sprintf("data dir %s is in use by another minibroker (pid %d", dir, cmd.Process.Pid)
			require.ErrorContains(t, err, want)
			require.ErrorContains(t, err, "lock "+filepath.Join(dir, LockName)+")")

			if ending == "SIGKILL" {
				require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
			} else {
				require.NoError(t, stdin.Close())
				require.True(t, lines.Scan())
				require.Equal(t, "released", lines.Text())
			}
			_ = cmd.Wait()

			d, err = lockSoon(t, dir)
			require.NoError(t, err, "the lock died with its holder")
			require.Equal(t, dir, d.Path())
			require.Contains(t, string(must(ReadFile(d.LockPath()))), fmt.Sprintf("pid=%d\n", os.Getpid()))
		})
	}
}

// TestLockTwiceInOneProcess: the lock belongs to an open file, so even the
// same process cannot take it twice; Release frees it and is idempotent.
func TestLockTwiceInOneProcess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Lock(dir)
	require.NoError(t, err)

	_, err = lockSoon(t, dir)
	require.ErrorIs(t, err, ErrInUse)
	require.ErrorContains(t, err, fmt.Sprintf("(pid %d on ", os.Getpid()))

	require.NoError(t, d.Release())
	require.NoError(t, d.Release())
	require.Empty(t, must(os.ReadFile(filepath.Join(dir, LockName))), "a released lock names nobody")
	d2, err := lockSoon(t, dir)
	require.NoError(t, err)
	require.NoError(t, d2.Release())
}

// TestLockRefusesWhatIsNotARegularFile: a .lock that is a symbolic link is
// never followed (its target stays byte for byte), and a FIFO, a directory
// or a socket is refused without blocking.
func TestLockRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		make func(t *testing.T, path string)
		what string
	}{
		{"symlink to a file outside", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "precious")
			require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
			require.NoError(t, os.Symlink(target, path))
			t.Cleanup(func() { require.Equal(t, "keep me", string(must(os.ReadFile(target)))) })
		}, "symbolic link; refusing to follow it"},
		{"dangling symlink", func(t *testing.T, path string) {
			target := filepath.Join(t.TempDir(), "nothing")
			require.NoError(t, os.Symlink(target, path))
			t.Cleanup(func() { require.NoFileExists(t, target, "no file is created through the link") })
		}, "symbolic link"},
		{"FIFO", func(t *testing.T, path string) { require.NoError(t, syscall.Mkfifo(path, 0o644)) }, "FIFO"},
		{"directory", func(t *testing.T, path string) { require.NoError(t, os.Mkdir(path, 0o755)) }, "directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, LockName)
			tc.make(t, path)
			d, err := lockSoon(t, dir)
			require.ErrorIs(t, err, ErrNotRegular)
			require.Nil(t, d)
			require.ErrorContains(t, err, path+" is a "+tc.what)
			require.ErrorContains(t, err, "lock data dir "+dir)
		})
	}
}

func TestLockMissingDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "missing")
	_, err := Lock(dir)
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, dir)
	require.NoDirExists(t, dir, "Lock does not create the directory")
}

func TestReadHolder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, data, want string
	}{
		{"complete", "pid=42\nhost=box\nsince=2025-01-02T03:04:05Z\n", "(pid 42 on box since 2025-01-02T03:04:05Z, lock "},
		{"not written yet", "", "(pid unknown, lock "},
		{"garbage", "hello\npid=x\n", "(pid unknown, lock "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, LockName)
			require.NoError(t, os.WriteFile(path, []byte(tc.data), 0o644))
			err := inUse(dir, path)
			require.ErrorIs(t, err, ErrInUse)
			require.True(t, strings.Contains(err.Error(), tc.want), "%v", err)
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
