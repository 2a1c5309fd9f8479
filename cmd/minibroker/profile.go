package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
)

// profileMutexFraction is the share of mutex contention events sampled
// while profiling (runtime.SetMutexProfileFraction): one in this many.
const profileMutexFraction = 10

// profiler writes the broker's pprof profiles into one directory: a CPU
// profile of the whole run (cpu.pprof) and, when it stops, the
// allocations since start (allocs.pprof), the contended mutexes
// (mutex.pprof) and the heap (heap.pprof). For `make bench` and for
// finding where a server's time goes (docs/performance.md).
type profiler struct {
	dir string
	cpu *os.File
}

// startProfile creates dir if needed and starts the CPU profile; a nil
// profiler (dir "") does nothing.
func startProfile(dir string) (*profiler, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--profile-dir: %w", err)
	}
	runtime.SetMutexProfileFraction(profileMutexFraction)
	return &profiler{dir: dir, cpu: f}, nil
}

// stop ends the CPU profile and writes the others.
func (p *profiler) stop() error {
	if p == nil {
		return nil
	}
	pprof.StopCPUProfile()
	errs := []error{p.cpu.Close()}
	for _, name := range []string{"allocs", "mutex", "heap"} {
		errs = append(errs, p.write(name))
	}
	return errors.Join(errs...)
}

func (p *profiler) write(name string) error {
	f, err := os.Create(filepath.Join(p.dir, name+".pprof"))
	if err != nil {
		return err
	}
	err = pprof.Lookup(name).WriteTo(f, 0)
	return errors.Join(err, f.Close())
}
