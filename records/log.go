package records

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/minibroker/minibroker/catalog"
)

// Log is every partition's log under one directory (or in memory). It is
// safe for concurrent use: appends to one partition are ordered, appends
// to different partitions do not share a lock, and reads never wait for a
// sync.
type Log struct {
	cfg   Config // with defaults
	fs    fileSystem
	v     *validator
	flush *flusher
	pids  *producerIDs
	stats counters

	settings topicSettings // topics' own TopicSettings (settings.go)
	maxOpen  int64         // partitions the Log may hold open (half the open-file limit); 0: no bound

	files      *fileCache                         // open files of sealed segments
	corruptLog limitedLog                         // rate-limits the lines of corrupt batches met by reads
	ckpt       *checkpointer                      // nil in memory
	changes    atomic.Uint64                      // bumped when a high watermark, log start or partition set changes
	want       map[TopicPartition]checkpointEntry // the checkpoint Open found; nil if none
	fresh      bool                               // Open made the directory

	allocFailed atomic.Bool // an Allocate failed and was logged (prealloc.go)

	// parts is replaced, never modified, so lookups take no lock.
	parts    atomic.Pointer[map[TopicPartition]*partition]
	scratch  sync.Pool // of *[]byte: windows for reads and lookups
	closed   atomic.Bool
	createMu sync.Mutex // serializes CreatePartitions and Close
	closeErr error      // guarded by createMu
}

// Open recovers every partition under cfg.Dir (see recover.go) and starts
// the flusher. With cfg.Dir "" it returns an empty Log in memory. Damage
// Open will not repair fails it with an error wrapping ErrCorrupt and
// naming the file; the files are left as they were.
func Open(cfg Config) (*Log, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	l := &Log{cfg: cfg, fs: cfg.fs}
	l.files = newFileCache(l.fs, sealedFiles)
	l.v = newValidator(cfg)
	l.settings.maxMsg.Store(cfg.MaxMessageBytes)
	if cfg.Dir != "" {
		l.maxOpen = openFileLimit() / 2
	}
	l.flush = newFlusher(l)
	parts := map[TopicPartition]*partition{}
	maxPID := int64(-1)
	if cfg.Dir != "" {
		var err error
		if maxPID, err = l.recoverAll(parts); err != nil {
			for _, p := range parts {
				p.closeFiles()
			}
			return nil, err
		}
	}
	pids, err := openProducerIDs(l.fs, cfg.Dir, maxPID+1, cfg.Logger)
	if err == nil && cfg.Dir != "" {
		err = l.checkLoss(parts)
		l.want = nil
	}
	if err != nil {
		for _, p := range parts {
			p.closeFiles()
		}
		return nil, err
	}
	l.pids = pids
	l.parts.Store(&parts)
	go l.flush.run()
	if cfg.Dir != "" {
		l.ckpt = &checkpointer{l: l, path: filepath.Join(cfg.Dir, checkpointFile),
			stopc: make(chan struct{}), donec: make(chan struct{})}
		go l.ckpt.run(cfg.CheckpointInterval)
	}
	cfg.Logger.Info("partition logs open", "dir", cfg.Dir, "partitions", len(parts))
	return l, nil
}

// recoverAll opens every partition directory under the log directory and
// returns the largest producer id their batches hold.
func (l *Log) recoverAll(parts map[TopicPartition]*partition) (int64, error) {
	if _, err := l.fs.ReadDir(l.cfg.Dir); isNotExist(err) {
		l.fresh = true
	}
	if err := l.fs.MkdirAll(l.cfg.Dir); err != nil {
		return 0, fmt.Errorf("records: %w", err)
	}
	// The directory may be new: make its name durable before anything
	// durable goes into it.
	if err := l.fs.SyncDir(filepath.Dir(filepath.Clean(l.cfg.Dir))); err != nil {
		return 0, fmt.Errorf("records: %w", err)
	}
	if err := l.loadCheckpoint(); err != nil {
		return 0, err
	}
	entries, err := l.fs.ReadDir(l.cfg.Dir)
	if err != nil {
		return 0, fmt.Errorf("records: %w", err)
	}
	w := &fileScanner{buf: make([]byte, recoverWindowBytes)}
	maxPID := int64(-1)
	for _, e := range entries {
		path := filepath.Join(l.cfg.Dir, e.name)
		if e.name == producerIDFile || strings.HasPrefix(e.name, producerIDFile+".tmp-") ||
			e.name == checkpointFile || strings.HasPrefix(e.name, checkpointFile+".tmp-") {
			continue
		}
		tp, ok := parsePartitionDir(e.name)
		if !ok && isDeleting(e.name) {
			if err := l.removeTree(path); err != nil {
				return 0, err
			}
			if err := l.fs.SyncDir(l.cfg.Dir); err != nil {
				return 0, fmt.Errorf("records: %w", err)
			}
			l.cfg.Logger.Info("removed the partition directory of a deleted topic", "file", path)
			continue
		}
		if !ok {
			l.cfg.Logger.Warn("ignoring a name that is not a partition directory", "file", path)
			continue
		}
		if e.kind != kindDir {
			return 0, fmt.Errorf("%w: %s: partition %s is not a directory", ErrCorrupt, path, tp)
		}
		p, pid, err := l.recoverPartition(tp, w)
		if err != nil {
			return 0, err
		}
		parts[tp] = p
		maxPID = max(maxPID, pid)
	}
	return maxPID, nil
}

// parsePartitionDir reads "<topic>-<partition>".
func parsePartitionDir(name string) (TopicPartition, bool) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return TopicPartition{}, false
	}
	topic, num := name[:i], name[i+1:]
	n, err := strconv.ParseInt(num, 10, 32)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != num || !catalog.ValidTopicName(topic) {
		return TopicPartition{}, false
	}
	return TopicPartition{Topic: topic, Partition: int32(n)}, true
}

// validTopic refuses a name the catalog would not accept as a topic
// (catalog.ValidTopicName, Kafka's Topic.validate); the same rule keeps
// partition directory names safe.
func validTopic(topic string) error {
	if !catalog.ValidTopicName(topic) {
		return fmt.Errorf("records: %w: %q", catalog.ErrInvalidTopic, topic)
	}
	return nil
}

// CreatePartitions makes sure topic has partitions 0..n-1, creating each
// that is missing with an empty segment (durably: the directories are
// synced). Existing partitions are kept as they are, so it is idempotent;
// the catalog calls it when a topic is created. On an error the
// partitions it had created are removed again, files and directories:
// all or nothing.
func (l *Log) CreatePartitions(topic string, n int32) error {
	if err := validTopic(topic); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("records: %d partitions for topic %q", n, topic)
	}
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if l.closed.Load() {
		return ErrClosed
	}
	cur := *l.parts.Load()
	if err := l.checkFileBudget(cur, topic, n); err != nil {
		return err
	}
	var created []*partition
	var err error
	for i := range n {
		tp := TopicPartition{Topic: topic, Partition: i}
		if cur[tp] != nil {
			continue
		}
		var p *partition
		if p, err = l.createPartition(tp); err != nil {
			break
		}
		created = append(created, p)
	}
	if len(created) > 0 && err == nil {
		if serr := l.fs.SyncDir(l.cfg.Dir); serr != nil {
			err = fmt.Errorf("%w: sync %s: %w", ErrStorage, l.cfg.Dir, serr)
		}
	}
	if err != nil {
		// All or nothing: a topic is never left with some of its
		// partitions on disk and none in the catalog.
		if len(created) > 0 {
			l.undoCreate(topic, created, err)
		}
		return err
	}
	if len(created) > 0 {
		next := maps.Clone(cur)
		for _, p := range created {
			next[p.tp] = p
		}
		l.parts.Store(&next)
		l.changes.Add(1)
	}
	return err
}

// checkFileBudget refuses partitions of topic up to n that would take the
// Log past maxOpenPartitions (ErrTooManyPartitions). Called with createMu
// held.
func (l *Log) checkFileBudget(cur map[TopicPartition]*partition, topic string, n int32) error {
	if l.maxOpen <= 0 {
		return nil
	}
	adding := int64(0)
	for i := range n {
		if cur[TopicPartition{Topic: topic, Partition: i}] == nil {
			adding++
		}
	}
	if total := int64(len(cur)) + adding; adding > 0 && total > l.maxOpen {
		return fmt.Errorf("%w: %d partitions would hold %d segment files open, more than %d (half of the process's limit of %d open files)",
			ErrTooManyPartitions, adding, total, l.maxOpen, 2*l.maxOpen)
	}
	return nil
}

// createPartition makes a partition's directory and first segment.
func (l *Log) createPartition(tp TopicPartition) (*partition, error) {
	p := newPartition(l, tp)
	if err := l.fs.MkdirAll(p.dir); err != nil {
		return nil, fmt.Errorf("%w: partition %s: %w", ErrStorage, tp, err)
	}
	s := newSegment(p.dir, 0, nil)
	f, _, err := l.fs.OpenFile(s.path, true)
	if err != nil {
		_ = l.fs.Remove(p.dir) // an empty directory only: the one made just now
		return nil, fmt.Errorf("%w: partition %s: %w", ErrStorage, tp, err)
	}
	if err := l.fs.SyncDir(p.dir); err != nil {
		_ = f.Close()
		_ = l.fs.Remove(s.path)
		_ = l.fs.Remove(p.dir)
		return nil, fmt.Errorf("%w: partition %s: sync %s: %w", ErrStorage, tp, p.dir, err)
	}
	s.f = f
	p.segments = []*segment{s}
	p.durable = durablePoint{seg: s, maxTS: math.MinInt64, maxTSOffset: -1}
	return p, nil
}

// Fresh reports whether Open made the log directory: there were no logs
// before, as in a data directory from before partition logs existed.
func (l *Log) Fresh() bool { return l.fresh }

// Partitions lists every partition, sorted by topic and partition.
func (l *Log) Partitions() []TopicPartition {
	tps := slices.Collect(maps.Keys(*l.parts.Load()))
	sortPartitions(tps)
	return tps
}

// sortPartitions sorts tps by topic and partition.
func sortPartitions(tps []TopicPartition) {
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition) - int(b.Partition)
	})
}

func (l *Log) lookup(topic string, partition int32) *partition {
	return (*l.parts.Load())[TopicPartition{Topic: topic, Partition: partition}]
}

// partition finds a partition, or says why it cannot.
func (l *Log) partition(topic string, partition int32) (*partition, error) {
	if l.closed.Load() {
		return nil, ErrClosed
	}
	p := l.lookup(topic, partition)
	if p == nil {
		return nil, fmt.Errorf("%w: %s", ErrUnknownPartition, TopicPartition{Topic: topic, Partition: partition})
	}
	return p, nil
}

// Append writes a validated batch at the end of a partition's log,
// assigning its offsets (the base offset is written into the batch's
// bytes; nothing else of them changes). It returns once the batch is
// written, not durable: Wait on the Pending for that. A retry of one of
// an idempotent producer's last five batches is not written again: its
// Pending reports the original offsets once they are durable. An error
// means nothing was stored: ErrUnknownPartition, ErrUnknownProducerID,
// ErrOutOfOrderSequence, ErrInvalidProducerEpoch, ErrStorage, ErrClosed.
func (l *Log) Append(topic string, partition int32, b Batch) (*Pending, error) {
	if b.raw == nil {
		return nil, fmt.Errorf("%w: batch not validated", ErrInvalidRecord)
	}
	if b.h.idempotent() && !l.pids.issued(b.h.producerID) {
		return nil, fmt.Errorf("%w: producer id %d was never handed out by InitProducerId", ErrUnknownProducerID, b.h.producerID)
	}
	p, err := l.partition(topic, partition)
	if err != nil {
		return nil, err
	}
	return p.append(b)
}

// Flush starts a flush round for every append not durable yet and
// returns without waiting. A caller that does not Wait (acks=0) calls it
// after its appends, so that they become durable and visible.
func (l *Log) Flush() { l.flush.kick() }

// InitProducerID hands out a producer id never handed out before by this
// Log or any earlier one on the same directory, with epoch 0, as Kafka
// does for every InitProducerId without a transactional id.
func (l *Log) InitProducerID() (id int64, epoch int16, err error) {
	if l.closed.Load() {
		return 0, 0, ErrClosed
	}
	id, err = l.pids.allocate()
	return id, 0, err
}

// Close makes everything appended durable, closes every file and fires
// every Waiter. Later calls return the first call's result; every other
// method then returns ErrClosed.
func (l *Log) Close() error {
	l.createMu.Lock()
	defer l.createMu.Unlock()
	if l.closed.Swap(true) {
		return l.closeErr
	}
	parts := *l.parts.Load()
	for _, p := range parts {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
	}
	errs := []error{l.flush.stop()}
	if l.ckpt != nil {
		close(l.ckpt.stopc)
		<-l.ckpt.donec
		errs = append(errs, l.ckpt.write())
	}
	for _, p := range parts {
		errs = append(errs, p.trimActive(), p.closeFiles())
		p.notify(-1)
	}
	for _, p := range parts {
		l.files.forget(p.segments)
	}
	l.closeErr = errors.Join(errs...)
	return l.closeErr
}

// closeFiles closes a partition's segment files.
func (p *partition) closeFiles() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var errs []error
	for _, s := range p.segments {
		if s.f != nil {
			if err := s.f.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close %s: %w", s.path, err))
			}
		}
	}
	return errors.Join(errs...)
}
