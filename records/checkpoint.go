package records

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// checkpointFile, in the log directory, records each partition's log
// start offset and high watermark as of its last write, as Kafka's
// recovery-point-offset-checkpoint and log-start-offset-checkpoint files
// do. Open compares the logs it finds with it: a high watermark only
// grows and a log start only moves by retention, which rewrites the file
// before it deletes a segment, so a partition found below either figure
// lost acknowledged records while the broker was down. Text, replaced
// atomically:
//
//	minibroker-log-checkpoint 1
//	<topic> <partition> <log-start> <high-watermark>
//	...
const checkpointFile = "checkpoint"

// checkpointMagic is the file's first line.
const checkpointMagic = "minibroker-log-checkpoint 1"

// checkpointEntry is one partition's line.
type checkpointEntry struct {
	logStart, hw int64
}

// parseCheckpoint reads a checkpoint strictly: the magic line, then one
// line per partition with a valid name, numbers that are not negative, a
// log start not past the high watermark, and no partition twice.
func parseCheckpoint(data []byte) (map[TopicPartition]checkpointEntry, error) {
	out := map[TopicPartition]checkpointEntry{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<10)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			if text != checkpointMagic {
				return nil, fmt.Errorf("line 1 is %q, not %q", truncate(text), checkpointMagic)
			}
			continue
		}
		f := strings.Split(text, " ")
		if len(f) != 4 {
			return nil, fmt.Errorf("line %d: %d fields, want 4", line, len(f))
		}
		tp, ok := parsePartitionDir(f[0] + "-" + f[1])
		if !ok || tp.Topic != f[0] {
			return nil, fmt.Errorf("line %d: %q is not a partition", line, truncate(f[0]+" "+f[1]))
		}
		start, err1 := strconv.ParseInt(f[2], 10, 64)
		hw, err2 := strconv.ParseInt(f[3], 10, 64)
		if err1 != nil || err2 != nil || start < 0 || hw < start {
			return nil, fmt.Errorf("line %d: log start %q and high watermark %q", line, truncate(f[2]), truncate(f[3]))
		}
		if _, dup := out[tp]; dup {
			return nil, fmt.Errorf("line %d: partition %s twice", line, tp)
		}
		out[tp] = checkpointEntry{logStart: start, hw: hw}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if line == 0 {
		return nil, errors.New("empty")
	}
	return out, nil
}

// truncate shortens a piece of a bad file for an error message.
func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// formatCheckpoint renders entries in the order of tps.
func formatCheckpoint(tps []TopicPartition, entries map[TopicPartition]checkpointEntry) []byte {
	var b bytes.Buffer
	b.WriteString(checkpointMagic + "\n")
	for _, tp := range tps {
		e := entries[tp]
		fmt.Fprintf(&b, "%s %d %d %d\n", tp.Topic, tp.Partition, e.logStart, e.hw)
	}
	return b.Bytes()
}

// checkpointer writes the checkpoint: periodically while the logs change,
// before retention deletes, and at Close.
type checkpointer struct {
	l    *Log
	path string

	mu      sync.Mutex // serializes writes
	written uint64     // guarded by mu: changes as of the last write
	stopc   chan struct{}
	donec   chan struct{}
}

// write replaces the checkpoint with every partition's current log start
// and high watermark (read without partition locks: both are atomics, and
// a figure read a little early is only ever lower than the truth).
func (c *checkpointer) write() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	changes := c.l.changes.Load()
	parts := *c.l.parts.Load()
	entries := make(map[TopicPartition]checkpointEntry, len(parts))
	tps := make([]TopicPartition, 0, len(parts))
	for tp, p := range parts {
		entries[tp] = checkpointEntry{logStart: p.logStart.Load(), hw: p.hw.Load()}
		tps = append(tps, tp)
	}
	sortPartitions(tps)
	data := formatCheckpoint(tps, entries)
	if err := c.l.fs.WriteFileAtomic(c.path, data); err != nil {
		return fmt.Errorf("records: write %s: %w", c.path, err)
	}
	c.written = changes
	return nil
}

// run rewrites the checkpoint every interval in which something changed.
func (c *checkpointer) run(interval time.Duration) {
	defer close(c.donec)
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			c.mu.Lock()
			same := c.written == c.l.changes.Load()
			c.mu.Unlock()
			if same {
				continue
			}
			if err := c.write(); err != nil {
				c.l.cfg.Logger.Warn("checkpoint not written", "err", err)
			}
		case <-c.stopc:
			return
		}
	}
}

// loadCheckpoint reads the checkpoint in the log directory into
// l.want, before recovery: a tail recovery would cut below it is a loss
// too. A missing checkpoint (a new directory, or one from before the
// file existed) checks nothing.
func (l *Log) loadCheckpoint() error {
	path := filepath.Join(l.cfg.Dir, checkpointFile)
	data, err := l.fs.ReadFile(path)
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("records: %w", err)
	}
	want, err := parseCheckpoint(data)
	if err != nil {
		return fmt.Errorf("%w: %s: not a log checkpoint: %v", ErrCorrupt, path, err)
	}
	l.want = want
	return nil
}

// checkLoss compares the partitions Open recovered with the checkpoint.
// Each partition below it is a loss: all of them are returned in one
// error wrapping ErrDataLoss, or, with Config.AcceptDataLoss, logged at
// Error.
func (l *Log) checkLoss(parts map[TopicPartition]*partition) error {
	path := filepath.Join(l.cfg.Dir, checkpointFile)
	if l.want == nil {
		if len(parts) > 0 {
			l.cfg.Logger.Warn("no log checkpoint; the log ends cannot be checked against what was acknowledged", "file", path)
		}
		return nil
	}
	want := l.want
	var losses []string
	for tp, e := range want {
		p := parts[tp]
		switch {
		case p == nil && e.hw > e.logStart:
			losses = append(losses, fmt.Sprintf("partition %s: directory %s is gone with offsets %d to %d",
				tp, filepath.Join(l.cfg.Dir, tp.String()), e.logStart, e.hw))
		case p == nil:
		case p.hw.Load() < e.hw:
			losses = append(losses, fmt.Sprintf("partition %s: the log ends at offset %d in %s, but offsets up to %d were acknowledged (newest segment deleted or truncated)",
				tp, p.hw.Load(), p.active().path, e.hw))
		case p.logStart.Load() < e.logStart && e.logStart <= p.hw.Load():
			p.logStart.Store(e.logStart) // moved inside a segment by DeleteRecords
		case p.logStart.Load() > e.logStart:
			losses = append(losses, fmt.Sprintf("partition %s: the log starts at offset %d in %s, but retention kept offsets from %d (oldest segment deleted)",
				tp, p.logStart.Load(), p.segments[0].path, e.logStart))
		}
	}
	if len(losses) == 0 {
		return nil
	}
	slices.Sort(losses)
	return l.loss(losses)
}

// loss reports losses: an error wrapping ErrDataLoss, or with
// Config.AcceptDataLoss one Error line each and nil.
func (l *Log) loss(losses []string) error {
	path := filepath.Join(l.cfg.Dir, checkpointFile)
	if l.cfg.AcceptDataLoss {
		for _, s := range losses {
			l.cfg.Logger.Error("acknowledged records missing; starting anyway as told", "loss", s, "checkpoint", path)
		}
		return nil
	}
	shown := losses
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(losses)-10))
	}
	return fmt.Errorf("%w (checkpoint %s): %s", ErrDataLoss, path, strings.Join(shown, "; "))
}
