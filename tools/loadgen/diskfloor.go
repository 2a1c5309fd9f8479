package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/protocol"
)

// FloorConfig configures the floor server.
type FloorConfig struct {
	// Dir is where a Produce appends its batches: one file, FloorFile.
	// With Dir "" a Produce stores and syncs nothing.
	Dir string
	// Topic and Partitions are the one topic Metadata shows; default
	// "bench" and 16.
	Topic      string
	Partitions int32
}

// FloorFile is the disk floor's one data file in FloorConfig.Dir.
const FloorFile = "floor.log"

// floor is the floor server's state: what the disk floor needs for
// producers, and the ids it hands out.
type floor struct {
	cfg  FloorConfig
	host string
	port int32
	seq  atomic.Int64 // member and producer ids handed out

	mu   sync.Mutex
	f    *os.File // nil without a Dir
	end  int64    // guarded by mu: the file's size
	next []int64  // guarded by mu: the next offset of each partition
}

func newFloor(cfg FloorConfig, addr net.Addr) (*floor, error) {
	if cfg.Topic == "" {
		cfg.Topic = "bench"
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 16
	}
	fl := &floor{cfg: cfg, next: make([]int64, cfg.Partitions)}
	if ta, ok := addr.(*net.TCPAddr); ok {
		fl.host, fl.port = ta.IP.String(), int32(ta.Port)
	}
	if cfg.Dir != "" {
		f, err := os.OpenFile(filepath.Join(cfg.Dir, FloorFile), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("loadgen: floor: %w", err)
		}
		fl.f = f
	}
	return fl, nil
}

func (fl *floor) close() {
	if fl.f != nil {
		_ = fl.f.Close()
	}
}

// apiVersions lists what minibroker supports, so that a client speaks to
// the floor in the versions it would speak to minibroker.
func (fl *floor) apiVersions(r *kmsg.ApiVersionsResponse) {
	for _, v := range protocol.SupportedVersions() {
		r.ApiKeys = append(r.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: v.Key, MinVersion: v.Min, MaxVersion: v.Max})
	}
}

// metadata answers as a one-broker cluster (node 0, the floor itself)
// holding the configured topic.
func (fl *floor) metadata(req *kmsg.MetadataRequest, r *kmsg.MetadataResponse) {
	r.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 0, Host: fl.host, Port: fl.port}}
	cluster := "floor"
	r.ClusterID = &cluster
	topic := func(name string) kmsg.MetadataResponseTopic {
		t := kmsg.NewMetadataResponseTopic()
		t.Topic = &name
		if name != fl.cfg.Topic {
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
			return t
		}
		for p := range fl.cfg.Partitions {
			tp := kmsg.NewMetadataResponseTopicPartition()
			tp.Partition, tp.Leader, tp.Replicas, tp.ISR = p, 0, []int32{0}, []int32{0}
			t.Partitions = append(t.Partitions, tp)
		}
		return t
	}
	if req.Topics == nil {
		r.Topics = append(r.Topics, topic(fl.cfg.Topic))
		return
	}
	for _, t := range req.Topics {
		if t.Topic != nil {
			r.Topics = append(r.Topics, topic(*t.Topic))
		}
	}
}

// produce is the disk floor: each partition's batch bytes are appended to
// the one file as they came (with the partition's next offset written
// into the batch's base offset, so that a consumer could read them), then
// the file is fdatasynced once, and only then is the request answered.
// Nothing is validated, indexed or remembered about producers: this is
// what the same bytes cost to make durable on the same disk.
func (fl *floor) produce(req *kmsg.ProduceRequest, r *kmsg.ProduceResponse) kmsg.Response {
	var werr error
	wrote := false
	fl.mu.Lock()
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			switch {
			case t.Topic != fl.cfg.Topic || p.Partition < 0 || p.Partition >= fl.cfg.Partitions:
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case len(p.Records) < 61: // a record batch header
				rp.ErrorCode = kerr.CorruptMessage.Code
			default:
				rp.BaseOffset = fl.next[p.Partition]
				binary.BigEndian.PutUint64(p.Records, uint64(rp.BaseOffset))
				fl.next[p.Partition] += int64(int32(binary.BigEndian.Uint32(p.Records[57:]))) // record count
				if fl.f != nil && werr == nil {
					_, werr = fl.f.WriteAt(p.Records, fl.end)
					fl.end += int64(len(p.Records))
					wrote = true
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		r.Topics = append(r.Topics, rt)
	}
	fl.mu.Unlock()
	if wrote && werr == nil {
		werr = fdatasync(fl.f)
	}
	if werr != nil {
		for i := range r.Topics {
			for j := range r.Topics[i].Partitions {
				if rp := &r.Topics[i].Partitions[j]; rp.ErrorCode == 0 {
					rp.ErrorCode, rp.BaseOffset = kerr.KafkaStorageError.Code, -1
				}
			}
		}
	}
	if req.Acks == 0 {
		return nil
	}
	return r
}

// SyncStats is what MeasureSync or MeasureSyncAtOnce measured.
type SyncStats struct {
	Size     int // bytes appended before each sync
	N        int
	Writers  int // appending and syncing at once (MeasureSyncAtOnce); 0 or 1: one at a time
	Files    int // the files they append to, 1 for MeasureSync
	P50, P99 time.Duration
	MBPerSec float64 // Size x N over the whole time, 10^6 bytes per second
}

// MeasureSync appends size bytes n times at the end of a new file in dir,
// each followed by an fdatasync, one at a time, as the disk floor does for
// a request, and returns the time of each append and sync. The file is
// removed afterwards.
func MeasureSync(dir string, size, n int) (SyncStats, error) {
	f, err := os.CreateTemp(dir, "sync-*.log")
	if err != nil {
		return SyncStats{}, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	data := randomValues(size)
	lat := make([]time.Duration, n)
	begin := time.Now()
	for i := range lat {
		start := time.Now()
		if _, err := f.WriteAt(data, int64(i*size)); err != nil {
			return SyncStats{}, err
		}
		if err := fdatasync(f); err != nil {
			return SyncStats{}, err
		}
		lat[i] = time.Since(start)
	}
	total := time.Since(begin)
	slices.Sort(lat)
	return SyncStats{Size: size, N: n, Files: 1, P50: lat[n/2], P99: lat[n*99/100],
		MBPerSec: float64(size*n) / total.Seconds() / 1e6}, nil
}

// MeasureSyncAtOnce is the disk floor of many durable writers: writers
// goroutines, each n times appending size bytes to one of files new files
// in dir (writer w's i-th append goes to file (w+i*7) mod files) and
// fdatasyncing it, as a broker with one file per partition must for
// producers that each wait for their write. It returns the time of each
// append and sync. Concurrent syncs of one file are serialized, as a log
// that appends under a lock would; the files are removed afterwards.
func MeasureSyncAtOnce(dir string, size, writers, files, n int) (SyncStats, error) {
	type file struct {
		mu   sync.Mutex
		f    *os.File
		size int64
	}
	fs := make([]*file, files)
	for i := range fs {
		f, err := os.CreateTemp(dir, "sync-*.log")
		if err != nil {
			return SyncStats{}, err
		}
		defer os.Remove(f.Name())
		defer f.Close()
		fs[i] = &file{f: f}
	}
	data := randomValues(size)
	lat := make([]time.Duration, writers*n)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	begin := time.Now()
	for w := range writers {
		wg.Go(func() {
			for i := range n {
				fl := fs[(w+i*7)%files]
				start := time.Now()
				fl.mu.Lock()
				_, err := fl.f.WriteAt(data, fl.size)
				fl.size += int64(size)
				if err == nil {
					err = fdatasync(fl.f)
				}
				fl.mu.Unlock()
				if err != nil {
					errs[w] = err
					return
				}
				lat[w*n+i] = time.Since(start)
			}
		})
	}
	wg.Wait()
	total := time.Since(begin)
	if err := errors.Join(errs...); err != nil {
		return SyncStats{}, err
	}
	slices.Sort(lat)
	return SyncStats{Size: size, N: len(lat), Writers: writers, Files: files, P50: lat[len(lat)/2], P99: lat[len(lat)*99/100],
		MBPerSec: float64(size*len(lat)) / total.Seconds() / 1e6}, nil
}
