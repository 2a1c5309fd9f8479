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
// tail, and recoverTail cuts such a tail off. Zeros that end a segment
// are space allocated ahead of writes (see Zeros below). Damage anywhere
// else stops Open. It returns the largest producer id seen.
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
		zeros := pos // where the zeros that end the file begin, when bad
		if err == nil && bad != "" {
			zeros, err = w.zerosFrom(pos)
		}
		switch {
		case err != nil:
			return fail(fmt.Errorf("records: read %s: %w", s.path, err))
		case bad == "":
			// The file ends with a whole batch.
		case zeros == pos && newest:
			if err := l.cutZeros(p, s, w, pos); err != nil {
				return fail(err)
			}
		case zeros == pos && bases[i+1] == s.next:
			if err := l.cutSealedZeros(p, s, w, pos); err != nil {
				return fail(err)
			}
		case !newest:
			return fail(fmt.Errorf("%w: %s at byte %d: %s", ErrCorrupt, s.path, pos, bad))
		default:
			if err := l.recoverTail(p, s, w, pos, zeros, batches, bad); err != nil {
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

// Zeros. The active segment is allocated ahead of its writes
// (prealloc.go), so a crash leaves its file longer than its batches, the
// rest zeros: space nothing was written to. A batch never starts with
// zeros (its length is at least a header's), so zeros from a batch
// boundary to the end of the file are that space. In the newest segment
// they are truncated silently: no .cut file, no Warn, not a cut tail
// (cutZeros). A sealed segment never ends in zeros (a roll truncates
// before the sync that seals it, and creates the next segment after), so
// zeros there mean the file was not written the way we write it; they
// are taken as space all the same, truncated with a Warn, when the next
// segment starts exactly where the batches before them end, so that no
// offset is missing (cutSealedZeros); otherwise Open stops. A torn write
// over the zeros, and any other damage, follows recoverTail's rules, on
// the bytes before the zeros.

// zerosFrom returns where the run of zeros that ends the readable part of
// the file begins, not before pos: w.limit if the last byte is not zero,
// pos if everything from pos on is. It reads backwards from the end, so
// it costs the zeros and not the file.
func (w *fileScanner) zerosFrom(pos int64) (int64, error) {
	end := w.limit
	for end > pos {
		n := min(int64(len(w.buf)), end-pos)
		b, err := w.at(end-n, int(n))
		if err != nil {
			return 0, err
		}
		if k := len(bytes.TrimRight(b, "\x00")); k > 0 {
			return end - n + int64(k), nil
		}
		end -= n
	}
	return pos, nil
}

// cutZeros truncates the newest segment's zeros from pos, where its
// batches end, to the end of the file: space allocated ahead of writes
// that never came. Acknowledged offsets past pos (the checkpoint's high
// watermark) fail Open with ErrDataLoss instead, the file unchanged.
func (l *Log) cutZeros(p *partition, s *segment, w *fileScanner, pos int64) error {
	size := w.limit
	if err := l.cutLoss(p, s, pos, fmt.Sprintf("zeros from there to the end of the file (%d bytes)", size-pos)); err != nil {
		return err
	}
	if err := l.truncateAt(s, w, pos); err != nil {
		return err
	}
	l.cfg.Logger.Debug("space allocated ahead of the newest segment's batches truncated", "topic", p.tp.Topic,
		"partition", p.tp.Partition, "file", s.path, "from", pos, "to", size, "bytes", size-pos)
	return nil
}

// cutSealedZeros truncates a sealed segment's zeros from pos, where its
// batches end, to the end of the file, the next segment starting where
// they end (see Zeros above): logged at Warn, since our rolls leave none.
func (l *Log) cutSealedZeros(p *partition, s *segment, w *fileScanner, pos int64) error {
	size := w.limit
	if err := l.truncateAt(s, w, pos); err != nil {
		return err
	}
	l.cfg.Logger.Warn("zeros truncated off the end of a sealed segment", "topic", p.tp.Topic,
		"partition", p.tp.Partition, "file", s.path, "from", pos, "to", size, "bytes", size-pos)
	return nil
}

// truncateAt cuts the file of s to pos, durably, and ends the window
// there.
func (l *Log) truncateAt(s *segment, w *fileScanner, pos int64) error {
	if err := s.f.Truncate(pos); err != nil {
		return fmt.Errorf("records: truncate %s to %d: %w", s.path, pos, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("records: sync %s: %w", s.path, err)
	}
	w.limit, w.n = pos, 0
	return nil
}

// cutLoss is the ErrDataLoss for cutting the newest segment of p at pos,
// for reason, if the checkpoint Open found says offsets past s.next were
// acknowledged; else nil.
func (l *Log) cutLoss(p *partition, s *segment, pos int64, reason string) error {
	e, ok := l.want[p.tp]
	if !ok || s.next >= e.hw {
		return nil
	}
	return l.loss([]string{fmt.Sprintf("partition %s: %s at byte %d: %s, but offsets up to %d were acknowledged, and cutting the tail there would leave the log ending at %d",
		p.tp, s.path, pos, reason, e.hw, s.next)})
}

// sectorBytes is the unit a disk writes whole or not at all: a write cut
// short by a power failure loses whole sectors, and over allocated space
// leaves zeros from a sector boundary on.
const sectorBytes = 512

// recoverTail cuts the newest segment back to pos, where its first
// unsound batch starts, unless a sound batch follows it: a torn write
// damages only the end, so damage followed by good data is corruption,
// and Open stops. zeros is where the zeros that end the file begin (past
// pos). The cut bytes are kept beside the segment: the unsound batch's
// own bytes as its header gives them (as far as the file goes), or up to
// zeros if written bytes run on past it, but not the zeros of space
// allocated ahead after them. A batch cut whole (complete but failing its
// checks) is corruption, logged at Error; a partial one is a torn write,
// logged at Warn. So is a complete one whose bytes are zeros from a
// sector boundary inside it to the end of the file: a write over
// allocated space cut short. Zeros at the end of a whole batch are not
// enough (a record without headers ends in a zero byte).
func (l *Log) recoverTail(p *partition, s *segment, w *fileScanner, pos, zeros int64, batches int, bad string) error {
	size := w.limit
	if at, err := soundBatchAfter(w, pos, zeros, s.next); err != nil {
		return fmt.Errorf("records: read %s: %w", s.path, err)
	} else if at >= 0 {
		return fmt.Errorf("%w: %s at byte %d: %s, and a sound batch follows at byte %d", ErrCorrupt, s.path, pos, bad, at)
	}
	if err := l.cutLoss(p, s, pos, bad); err != nil {
		return err
	}
	h, _ := w.header(pos)
	lengthOK := size-pos >= batchHeaderBytes && h.length >= batchHeaderBytes-logOverhead
	end := zeros
	switch {
	case size-pos < batchHeaderBytes:
		end = size // a header cut short: all of it is the batch's
	case lengthOK:
		end = max(zeros, min(size, pos+h.size()))
	}
	torn := !lengthOK || h.size() > size-pos ||
		(zeros+sectorBytes-1)/sectorBytes*sectorBytes < pos+h.size()
	cut, err := l.saveCut(s, w, pos, end)
	if err != nil {
		return fmt.Errorf("records: keep the tail of %s: %w", s.path, err)
	}
	if err := l.truncateAt(s, w, pos); err != nil {
		return err
	}
	l.stats.cutTails.Add(1)
	msg, level := "torn tail cut off the newest segment", l.cfg.Logger.Warn
	if !torn {
		msg, level = "corrupt batch cut off the newest segment", l.cfg.Logger.Error
	}
	level(msg, "topic", p.tp.Topic, "partition", p.tp.Partition, "file", s.path,
		"from", pos, "to", end, "bytes", end-pos, "zeros", size-end, "batches", batches,
		"next_offset", s.next, "reason", bad, "saved", cut)
	return nil
}

// soundBatchAfter looks for a batch starting after pos that has magic 2,
// a length within the file, a base offset past next and a good CRC, and
// returns its position or -1. Requiring an offset past next keeps a
// batch that a client sent as a record value from passing for log data.
// Only positions whose magic byte lies before written, where the zeros
// that end the file begin, are looked at: a batch's magic is not zero,
// so none starts in them, and the space allocated ahead is not crawled
// through.
func soundBatchAfter(w *fileScanner, pos, written, next int64) (int64, error) {
	size := w.limit
	for q := pos + 1; q+offMagic < written && q+batchHeaderBytes <= size; {
		chunk, err := w.at(q+offMagic, int(min(int64(len(w.buf)), written-q-offMagic)))
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
