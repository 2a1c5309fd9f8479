package records

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"strconv"
	"strings"
)

// recoverWindowBytes is the read window of a recovery walk.
const recoverWindowBytes = 1 << 20

// cutInfix joins a segment's name and a number in the name of the file
// that keeps a tail cut off it: 00000000000000000000.log.cut-1.
const cutInfix = ".cut-"

// recoverPartition opens one partition directory. Every segment is walked
// by its batch headers, which rebuilds the sparse index, the max
// timestamps and the producer state, and checks that offsets run on
// without a gap from segment to segment. The newest segment's batches are
// checked whole (length, magic, CRC): a crash can only have damaged its
// tail, and recoverTail cuts such a tail off. Damage anywhere else stops
// Open. It returns the largest producer id seen.
func (l *Log) recoverPartition(tp TopicPartition, w *fileScanner) (*partition, int64, error) {
	p := newPartition(l, tp)
	entries, err := l.fs.ReadDir(p.dir)
	if err != nil {
		return nil, 0, fmt.Errorf("records: %w", err)
	}
	var bases []int64
	for _, e := range entries {
		path := filepath.Join(p.dir, e.name)
		if base, ok := parseSegmentName(e.name); ok {
			if e.kind != kindFile {
				return nil, 0, fmt.Errorf("%w: segment %s is not a regular file", ErrCorrupt, path)
			}
			bases = append(bases, base)
			continue
		}
		if seg, _, ok := strings.Cut(e.name, cutInfix); ok {
			if _, ok := parseSegmentName(seg); ok {
				continue // a tail cut earlier, kept for inspection
			}
		}
		l.cfg.Logger.Warn("ignoring a stray file in a partition directory", "file", path)
	}
	if len(bases) == 0 {
		// A crash between creating the directory and its first segment.
		l.cfg.Logger.Warn("partition directory holds no segment; starting it empty", "file", p.dir)
		q, err := l.createPartition(tp)
		return q, -1, err
	}
	maxPID := int64(-1)
	fail := func(err error) (*partition, int64, error) {
		p.closeFiles()
		return nil, 0, err
	}
	next := bases[0]
	for i, base := range bases {
		s := newSegment(p.dir, base, nil)
		if base != next {
			return fail(fmt.Errorf("%w: %s starts at offset %d, but the segment before it ends at %d", ErrCorrupt, s.path, base, next))
		}
		f, size, err := l.fs.OpenFile(s.path, false)
		if errors.Is(err, errNotRegular) {
			return fail(fmt.Errorf("%w: segment %w", ErrCorrupt, err))
		}
		if err != nil {
			return fail(fmt.Errorf("records: %w", err))
		}
		s.f = f
		p.segments = append(p.segments, s)
		w.f, w.limit, w.n = f, size, 0
		newest := i == len(bases)-1
		pos, batches, bad, err := p.walk(s, w, newest, &maxPID)
		switch {
		case err != nil:
			return fail(fmt.Errorf("records: read %s: %w", s.path, err))
		case bad != "" && !newest:
			return fail(fmt.Errorf("%w: %s at byte %d: %s", ErrCorrupt, s.path, pos, bad))
		case bad != "":
			if err := l.recoverTail(p, s, w, pos, batches, bad); err != nil {
				return fail(err)
			}
		}
		if !newest {
			s.seal()
			s.closeFile() // opened again on demand
		}
		p.bytes += s.size
		next = s.next
	}
	a := p.active()
	p.logEnd = a.next
	p.durable = durablePoint{end: a.next, seg: a, size: a.size, maxTS: a.maxTS, maxTSOffset: a.maxTSOffset}
	p.hw.Store(a.next)
	p.logStart.Store(p.segments[0].base)
	return p, maxPID, nil
}

// walk reads the batches of s from the start, tracking each in the
// segment and the producer state, until the end of the file or the first
// batch that is not sound. It returns that batch's position and what is
// wrong with it ("" if none), and how many sound batches precede it.
// full also checks each CRC.
func (p *partition) walk(s *segment, w *fileScanner, full bool, maxPID *int64) (pos int64, batches int, bad string, err error) {
	for pos < w.limit {
		if w.limit-pos < batchHeaderBytes {
			return pos, batches, fmt.Sprintf("%d bytes, less than a batch header", w.limit-pos), nil
		}
		h, err := w.header(pos)
		if err != nil {
			return pos, batches, "", err
		}
		if bad := checkStored(&h, s.next, w.limit-pos); bad != "" {
			return pos, batches, bad, nil
		}
		if full {
			sum, err := w.checksum(pos, h.size())
			if err != nil {
				return pos, batches, "", err
			}
			if sum != h.crc {
				return pos, batches, fmt.Sprintf("stored crc %d, computed crc %d", h.crc, sum), nil
			}
		}
		s.track(pos, &h)
		if err := p.recoverTxn(w, pos, &h); err != nil {
			return pos, batches, "", err
		}
		if h.idempotent() {
			*maxPID = max(*maxPID, h.producerID)
		}
		pos += h.size()
		batches++
	}
	return pos, batches, "", nil
}

// checkStored checks a stored batch's header: a sane length within the
// file, magic 2, offsets that continue the log.
func checkStored(h *header, next, left int64) string {
	switch {
	case h.length < batchHeaderBytes-logOverhead:
		return fmt.Sprintf("batch length %d is less than a batch header", h.length)
	case h.size() > left:
		return fmt.Sprintf("batch of %d bytes runs past the end of the file (%d bytes left)", h.size(), left)
	case h.magic != 2:
		return fmt.Sprintf("magic %d", h.magic)
	case h.baseOffset != next:
		return fmt.Sprintf("base offset %d where offset %d comes next", h.baseOffset, next)
	case h.lastOffsetDelta < 0 || h.baseOffset > math.MaxInt64-int64(h.lastOffsetDelta)-1:
		return fmt.Sprintf("last offset delta %d", h.lastOffsetDelta)
	}
	return ""
}

// recoverTail cuts the newest segment back to pos, where its first
// unsound batch starts, unless a sound batch follows it: a torn write
// damages only the end, so damage followed by good data is corruption,
// and Open stops. The cut bytes are kept beside the segment. A batch cut
// whole (complete but failing its checks) is corruption, logged at Error;
// a partial one is a torn write, logged at Warn.
func (l *Log) recoverTail(p *partition, s *segment, w *fileScanner, pos int64, batches int, bad string) error {
	size := w.limit
	if at, err := soundBatchAfter(w, pos, s.next); err != nil {
		return fmt.Errorf("records: read %s: %w", s.path, err)
	} else if at >= 0 {
		return fmt.Errorf("%w: %s at byte %d: %s, and a sound batch follows at byte %d", ErrCorrupt, s.path, pos, bad, at)
	}
	if e, ok := l.want[p.tp]; ok && s.next < e.hw {
		return l.loss([]string{fmt.Sprintf("partition %s: %s at byte %d: %s, but offsets up to %d were acknowledged, and cutting the tail there would leave the log ending at %d",
			p.tp, s.path, pos, bad, e.hw, s.next)})
	}
	h, _ := w.header(pos)
	whole := size-pos >= batchHeaderBytes && h.length >= batchHeaderBytes-logOverhead && h.size() <= size-pos
	cut, err := l.saveCut(s, w, pos, size)
	if err != nil {
		return fmt.Errorf("records: keep the tail of %s: %w", s.path, err)
	}
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("records: truncate %s to %d: %w", s.path, pos, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("records: sync %s: %w", s.path, err)
	}
	w.limit, w.n = pos, 0
	l.stats.cutTails.Add(1)
	msg, level := "torn tail cut off the newest segment", l.cfg.Logger.Warn
	if whole {
		msg, level = "corrupt batch cut off the newest segment", l.cfg.Logger.Error
	}
	level(msg, "topic", p.tp.Topic, "partition", p.tp.Partition, "file", s.path,
		"from", pos, "to", size, "bytes", size-pos, "batches", batches, "next_offset", s.next,
		"reason", bad, "saved", cut)
	return nil
}

// soundBatchAfter looks for a batch starting after pos that has magic 2,
// a length within the file, a base offset past next and a good CRC, and
// returns its position or -1. Requiring an offset past next keeps a
// batch that a client sent as a record value from passing for log data.
func soundBatchAfter(w *fileScanner, pos, next int64) (int64, error) {
	size := w.limit
	for q := pos + 1; q+batchHeaderBytes <= size; {
		chunk, err := w.at(q+offMagic, int(min(int64(len(w.buf)), size-q-offMagic)))
		if err != nil {
			return -1, err
		}
		i := bytes.IndexByte(chunk, 2)
		if i < 0 {
			q += int64(len(chunk))
			continue
		}
		q += int64(i)
		if q+batchHeaderBytes > size {
			break
		}
		h, err := w.header(q)
		if err != nil {
			return -1, err
		}
		if h.length >= batchHeaderBytes-logOverhead && h.size() <= size-q && h.baseOffset > next {
			sum, err := w.checksum(q, h.size())
			if err != nil {
				return -1, err
			}
			if sum == h.crc {
				return q, nil
			}
		}
		q++
	}
	return -1, nil
}

// saveCut copies bytes [from, to) of s to a new file beside it, named
// <segment>.cut-<n> with the first n free, and makes it durable before
// the segment is cut.
func (l *Log) saveCut(s *segment, w *fileScanner, from, to int64) (string, error) {
	var f segmentFile
	var path string
	for n := 1; ; n++ {
		path = s.path + cutInfix + strconv.Itoa(n)
		var err error
		if f, _, err = l.fs.OpenFile(path, true); err == nil {
			break
		}
		if !errors.Is(err, fs.ErrExist) || n > 1000 {
			return "", err
		}
	}
	err := func() error {
		for p := from; p < to; {
			n := min(int64(len(w.buf)), to-p)
			b, err := w.at(p, int(n))
			if err != nil {
				return err
			}
			if _, err := f.WriteAt(b, p-from); err != nil {
				return err
			}
			p += n
		}
		return f.Sync()
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = l.fs.SyncDir(filepath.Dir(s.path))
	}
	return path, err
}
