package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// profileMutexFraction is the share of mutex contention events sampled
// while profiling (runtime.SetMutexProfileFraction): one in this many.
const profileMutexFraction = 10

// profiler records where a server's time goes (`make bench`,
// docs/performance.md). With a directory it writes pprof profiles into
// it: a CPU profile of the whole run (cpu.pprof) and, when it stops, the
// allocations since start (allocs.pprof), the contended mutexes
// (mutex.pprof) and the heap (heap.pprof). With a trace file it writes
// the runtime's execution trace of the whole run there, for go tool
// trace: what each goroutine spent running, waiting for a processor, in
// system calls and blocked, which a CPU profile cannot tell.
type profiler struct {
	dir   string
	cpu   *os.File // nil without a directory
	trace *os.File // nil without a trace file
}

// startProfile creates dir if needed and starts the CPU profile, and
// starts the execution trace into traceFile, creating its directory if
// needed; either may be "". A nil profiler (both "") does nothing.
func startProfile(dir, traceFile string) (*profiler, error) {
	if dir == "" && traceFile == "" {
		return nil, nil
	}
	p := &profiler{dir: dir}
	if traceFile != "" {
		if err := p.startTrace(traceFile); err != nil {
			return nil, fmt.Errorf("--trace-file: %w", err)
		}
	}
	if dir != "" {
		if err := p.startCPU(); err != nil {
			return nil, errors.Join(fmt.Errorf("--profile-dir: %w", err), p.stop())
		}
		runtime.SetMutexProfileFraction(profileMutexFraction)
	}
	return p, nil
}

func (p *profiler) startTrace(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := trace.Start(f); err != nil {
		f.Close()
		return err
	}
	p.trace = f
	return nil
}

func (p *profiler) startCPU() error {
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(p.dir, "cpu.pprof"))
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	p.cpu = f
	return nil
}

// stop ends the CPU profile and the trace, and writes the other profiles.
func (p *profiler) stop() error {
	if p == nil {
		return nil
	}
	var errs []error
	if p.trace != nil {
		trace.Stop()
		errs = append(errs, p.trace.Close())
	}
	if p.cpu != nil {
		pprof.StopCPUProfile()
		errs = append(errs, p.cpu.Close())
		for _, name := range []string{"allocs", "mutex", "heap"} {
			errs = append(errs, p.write(name))
		}
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
