package protocol

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/minibroker/minibroker/testkit/frametest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestReadFrameRoundTrip(t *testing.T) {
	t.Parallel()
	big := bytes.Repeat([]byte{0xab, 0xcd, 0xef}, 100_000) // 300 KB, read in chunks
	tests := []struct {
		name    string
		payload []byte
		wrap    func(io.Reader) io.Reader
	}{
		{"empty", []byte{}, nil},
		{"small", []byte("hello"), nil},
		{"small one byte at a time", []byte("hello"), iotest.OneByteReader},
		{"exactly one chunk", bytes.Repeat([]byte{7}, frameChunk), iotest.HalfReader},
		{"large", big, nil},
		{"large one byte at a time", big, iotest.OneByteReader},
		{"large half reads", big, iotest.HalfReader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var r io.Reader = bytes.NewReader(frametest.SizePrefixed(tc.payload))
			if tc.wrap != nil {
				r = tc.wrap(r)
			}
			got, err := ReadFrame(r, 0, nil)
			require.NoError(t, err)
			assert.Equal(t, tc.payload, got)

			_, err = ReadFrame(r, 0, nil)
			assert.ErrorIs(t, err, io.EOF, "clean end of stream after a whole frame")
		})
	}
}

func TestReadFrameErrors(t *testing.T) {
	t.Parallel()
	size := func(n int32) []byte { return binary.BigEndian.AppendUint32(nil, uint32(n)) }
	tests := []struct {
		name    string
		input   []byte
		max     int32
		wantErr error
		sizeErr *FrameSizeError // set when a *FrameSizeError is expected
	}{
		{"no bytes", nil, 0, io.EOF, nil},
		{"two bytes of size", []byte{0, 0}, 0, io.ErrUnexpectedEOF, nil},
		{"size without body", size(10), 0, io.ErrUnexpectedEOF, nil},
		{"truncated body", append(size(10), 1, 2, 3), 0, io.ErrUnexpectedEOF, nil},
		{"truncated large body", append(size(1<<20), make([]byte, 70_000)...), 0, io.ErrUnexpectedEOF, nil},
		{"negative size", size(-1), 0, ErrFrameTooLarge, &FrameSizeError{Size: -1, Max: DefaultMaxFrameBytes}},
		{"min int32 size", size(-1 << 31), 0, ErrFrameTooLarge, &FrameSizeError{Size: -1 << 31, Max: DefaultMaxFrameBytes}},
		{"over default max", size(DefaultMaxFrameBytes + 1), 0, ErrFrameTooLarge, &FrameSizeError{Size: DefaultMaxFrameBytes + 1, Max: DefaultMaxFrameBytes}},
		{"over custom max", append(size(9), make([]byte, 9)...), 8, ErrFrameTooLarge, &FrameSizeError{Size: 9, Max: 8}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadFrame(iotest.OneByteReader(bytes.NewReader(tc.input)), tc.max, nil)
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, tc.wantErr)
			if tc.sizeErr == nil {
				return
			}
			var fse *FrameSizeError
			require.ErrorAs(t, err, &fse)
			assert.Equal(t, tc.sizeErr, fse)
		})
	}
}

func TestFrameSizeErrorMessage(t *testing.T) {
	t.Parallel()
	assert.EqualError(t, &FrameSizeError{Size: -5, Max: 8}, "protocol: negative frame size -5")
	assert.EqualError(t, &FrameSizeError{Size: 9, Max: 8}, "protocol: frame size 9 exceeds max 8")
}

func TestReadFrameReusesBuffer(t *testing.T) {
	t.Parallel()
	buf := make([]byte, 0, 128)
	got, err := ReadFrame(bytes.NewReader(frametest.SizePrefixed([]byte("abc"))), 0, buf)
	require.NoError(t, err)
	assert.Equal(t, []byte("abc"), got)
	assert.Same(t, &buf[:1][0], &got[0], "frame must be read into the caller's buffer")
}

func TestReadFramePipelined(t *testing.T) {
	t.Parallel()
	var stream []byte
	want := [][]byte{[]byte("one"), {}, bytes.Repeat([]byte("x"), 100_000), []byte("four")}
	for _, p := range want {
		stream = append(stream, frametest.SizePrefixed(p)...)
	}
	br := bufio.NewReader(iotest.HalfReader(bytes.NewReader(stream)))
	var buf []byte
	for i, w := range want {
		got, err := ReadFrame(br, 0, buf)
		require.NoError(t, err, "frame %d", i)
		assert.Equal(t, w, got, "frame %d", i)
		buf = got
	}
	_, err := ReadFrame(br, 0, buf)
	assert.ErrorIs(t, err, io.EOF)
}

// maxReadReader records the largest buffer it was asked to fill.
type maxReadReader struct {
	r       io.Reader
	maxRead int
}

func (m *maxReadReader) Read(p []byte) (int, error) {
	m.maxRead = max(m.maxRead, len(p))
	return m.r.Read(p)
}

func TestReadFrameGrowsAsDataArrives(t *testing.T) {
	t.Parallel()
	// A peer announces the maximum and sends one byte.
	input := append(binary.BigEndian.AppendUint32(nil, DefaultMaxFrameBytes), 1)
	m := &maxReadReader{r: bytes.NewReader(input)}
	_, err := ReadFrame(m, 0, nil)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.LessOrEqual(t, m.maxRead, frameChunk, "buffer offered before data arrived")
}

// TestReadFrameAllocationIsBounded measures process-wide allocation, so it
// does not run in parallel with other tests.
func TestReadFrameAllocationIsBounded(t *testing.T) {
	input := append(binary.BigEndian.AppendUint32(nil, DefaultMaxFrameBytes), 1)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 8 {
		_, err := ReadFrame(bytes.NewReader(input), 0, nil)
		require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	}
	runtime.ReadMemStats(&after)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2<<20),
		"8 announced 16 MiB frames of 1 byte must not allocate 128 MiB")
}

func TestAppendResponse(t *testing.T) {
	t.Parallel()
	hb := func(v int16) kmsg.Response {
		r := kmsg.NewPtrHeartbeatResponse()
		r.Version, r.ErrorCode, r.ThrottleMillis = v, 22, 0
		return r
	}
	av := func(v int16) kmsg.Response {
		r := kmsg.NewPtrApiVersionsResponse()
		r.Version = v
		return r
	}
	tests := []struct {
		name string
		resp kmsg.Response
		want []byte
	}{
		{"heartbeat v3 header v0", hb(3), []byte{
			0, 0, 0, 10, // size
			0, 0, 0, 7, // correlation id
			0, 0, 0, 0, 0, 22, // throttle, error code
		}},
		{"heartbeat v4 header v1", hb(4), []byte{
			0, 0, 0, 12,
			0, 0, 0, 7,
			0,                 // response header tags
			0, 0, 0, 0, 0, 22, // throttle, error code
			0, // body tags
		}},
		{"api versions v3 header v0", av(3), []byte{
			0, 0, 0, 12,
			0, 0, 0, 7, // no header tags: ApiVersions always uses header v0
			0, 0, // error code
			1,          // compact array: zero keys
			0, 0, 0, 0, // throttle
			0, // body tags
		}},
		{"api versions v0 header v0", UnsupportedAPIVersionsResponse(), []byte{
			0, 0, 0, 16,
			0, 0, 0, 7,
			0, 35, // UNSUPPORTED_VERSION
			0, 0, 0, 1, // one key
			0, 18, 0, 0, 0, 4, // ApiVersions 0-4
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			prefix := []byte("keep")
			got := AppendResponse(append([]byte(nil), prefix...), 7, tc.resp)
			assert.Equal(t, prefix, got[:len(prefix)], "dst prefix preserved")
			assert.Equal(t, tc.want, got[len(prefix):])
		})
	}
}

// FuzzReadFrame checks that no input panics, that a frame is never larger
// than the cap, and that split reads give the same result as whole reads.
func FuzzReadFrame(f *testing.F) {
	f.Add(frametest.SizePrefixed([]byte("hello")), int32(16))
	f.Add(frametest.SizePrefixed([]byte("hello")), int32(4))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, int32(0))
	f.Add([]byte{0, 0, 0}, int32(0))
	f.Add([]byte{0, 1, 0, 1, 9}, int32(1<<20))
	f.Fuzz(func(t *testing.T, data []byte, maxBytes int32) {
		whole, errWhole := ReadFrame(bytes.NewReader(data), maxBytes, nil)
		split, errSplit := ReadFrame(iotest.OneByteReader(bytes.NewReader(data)), maxBytes, nil)
		if errWhole != nil {
			if errSplit == nil || errWhole.Error() != errSplit.Error() {
				t.Fatalf("whole read error %v, split read error %v", errWhole, errSplit)
			}
			var fse *FrameSizeError
			if errors.As(errWhole, &fse) != errors.Is(errWhole, ErrFrameTooLarge) {
				t.Fatalf("FrameSizeError and ErrFrameTooLarge disagree: %v", errWhole)
			}
			return
		}
		limit := maxBytes
		if limit <= 0 {
			limit = DefaultMaxFrameBytes
		}
		if len(whole) > int(limit) || len(whole) > len(data)-4 {
			t.Fatalf("frame of %d bytes from %d input bytes with max %d", len(whole), len(data), limit)
		}
		if errSplit != nil || !bytes.Equal(whole, split) {
			t.Fatalf("split read differs: %v", errSplit)
		}
		if want := int(binary.BigEndian.Uint32(data)); len(whole) != want {
			t.Fatalf("frame of %d bytes, size prefix says %d", len(whole), want)
		}
	})
}
