package server

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/minibroker/minibroker/coordinator"
	"github.com/minibroker/minibroker/offsets"
	"github.com/minibroker/minibroker/testkit/wiretest"
)

func TestTxnOffsetCommitStagesUntilEndTxn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.join("c", "g", "", "orders")
	pid, epoch := e.txnInit("tx")
	aoReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	aoReq.Version, aoReq.TransactionalID, aoReq.ProducerID, aoReq.ProducerEpoch, aoReq.Group = 3, "tx", pid, epoch, "g"
	require.Zero(t, call[*kmsg.AddOffsetsToTxnResponse](e, "p", aoReq).ErrorCode)
	commit := func(version int16, gen int32, partition int32) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = version, "tx", pid, epoch
		req.Group, req.MemberID, req.Generation = "g", j.MemberID, gen
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: partition, Offset: 7, LeaderEpoch: -1}}}}
		resp := call[*kmsg.TxnOffsetCommitResponse](e, "p", req)
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.IllegalGeneration.Code, commit(3, j.Generation+1, 0))
	require.Equal(t, int16(0), commit(0, 99, 1), "v0-2 name no member: not fenced")
	require.Equal(t, kerr.UnknownTopicOrPartition.Code, commit(0, 99, 9), "as a direct commit: the partition must exist")
	require.Equal(t, int16(0), commit(3, j.Generation, 2))

	fetch := func() kmsg.OffsetFetchResponseTopicPartition {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{2}}}
		return call[*kmsg.OffsetFetchResponse](e, "c", req).Topics[0].Partitions[0]
	}
	require.Equal(t, kerr.UnstableOffsetCommit.Code, fetch().ErrorCode)
	end := kmsg.NewPtrEndTxnRequest()
	end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "tx", pid, epoch, true
	require.Zero(t, call[*kmsg.EndTxnResponse](e, "p", end).ErrorCode)
	got := fetch()
	require.Zero(t, got.ErrorCode)
	require.Equal(t, int64(7), got.Offset)
}

// TestTxnOffsetCommitFencedInstance: a TxnOffsetCommit v3 is asked "who
// are you?" first, as an OffsetCommit is: the replaced run of static
// member a, naming its instance, is FENCED_INSTANCE_ID; without the
// instance id it is an unknown member; the current run's commit is
// staged. Nothing the fenced ones sent is staged.
func TestTxnOffsetCommitFencedInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	old, current := e.staticRestart("g")
	pid, epoch := e.txnInit("tx")
	aoReq := kmsg.NewPtrAddOffsetsToTxnRequest()
	aoReq.Version, aoReq.TransactionalID, aoReq.ProducerID, aoReq.ProducerEpoch, aoReq.Group = 3, "tx", pid, epoch, "g"
	require.Zero(t, call[*kmsg.AddOffsetsToTxnResponse](e, "p", aoReq).ErrorCode)
	a := "a"
	commit := func(member string, instance *string) int16 {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.TransactionalID, req.ProducerID, req.ProducerEpoch = 3, "tx", pid, epoch
		req.Group, req.MemberID, req.InstanceID, req.Generation = "g", member, instance, 1
		req.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 7, LeaderEpoch: -1}}}}
		return call[*kmsg.TxnOffsetCommitResponse](e, "p", req).Topics[0].Partitions[0].ErrorCode
	}
	fetch := func() int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group, req.RequireStable = 7, "g", true
		req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{0}}}
		return call[*kmsg.OffsetFetchResponse](e, "c", req).Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, kerr.FencedInstanceID.Code, commit(old, &a))
	require.Equal(t, kerr.UnknownMemberID.Code, commit(old, nil))
	require.Zero(t, fetch(), "nothing staged for partition 0")
	require.Zero(t, commit(current, &a))
	require.Equal(t, kerr.UnstableOffsetCommit.Code, fetch(), "the current run's offset is staged")
}

// pausedStore is an offset store whose next read, once armed, stops after
// it has read and before its caller goes on: a test moves the group's
// offsets on in between, as a commit finishing at that moment would.
type pausedStore struct {
	*offsets.Memory
	armed   atomic.Bool
	read    chan struct{} // receives once the armed read has read
	release chan struct{} // closed to let it go on
}

func newPausedStore(m *offsets.Memory) *pausedStore {
	return &pausedStore{Memory: m, read: make(chan struct{}, 1), release: make(chan struct{})}
}

func (s *pausedStore) pause() {
	if s.armed.CompareAndSwap(true, false) {
		s.read <- struct{}{}
		<-s.release
	}
}

func (s *pausedStore) Lookup(group, topic string, partition int32) (offsets.Entry, bool) {
	e, ok := s.Memory.Lookup(group, topic, partition)
	s.pause()
	return e, ok
}

func (s *pausedStore) Committed(group string) []offsets.Entry {
	es := s.Memory.Committed(group)
	s.pause()
	return es
}

// TestOffsetFetchRequireStableDuringEndTxn: an OffsetFetch with
// RequireStable that reads a partition's committed offset (3) while a
// transaction holds staged offsets for it (7), and whose answer goes out
// only after EndTxn has committed them, answers UNSTABLE_OFFSET_COMMIT,
// never the 3 it read with NONE: a new owner starting from 3 would write
// again, in its own transaction, the records the committed one already
// wrote (read_committed output twice). Once the commit is answered, the
// fetch answers 7. Over the wire, the fetch and EndTxn on their own
// connections, for named partitions (v7, v8) and for every offset of the
// group (v7 null topics).
func TestOffsetFetchRequireStableDuringEndTxn(t *testing.T) {
	t.Parallel()
	fetches := map[string]func(version int16) kmsg.Request{
		"named": func(version int16) kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.RequireStable = version, true
			if version < 8 {
				req.Group = "g"
				req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "orders", Partitions: []int32{2}}}
				return req
			}
			req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "orders", Partitions: []int32{2}}}}}
			return req
		},
		"all": func(version int16) kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version, req.Group, req.RequireStable = version, "g", true
			return req
		},
	}
	for _, tc := range []struct {
		name    string
		fetch   string
		version int16
	}{{"named v7", "named", 7}, {"named v8", "named", 8}, {"all v7", "all", 7}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var store *pausedStore
			e := newEnvWith(t, envOptions{store: func(m *offsets.Memory) coordinator.OffsetStore {
				store = newPausedStore(m)
				return store
			}})
			j := e.join("c", "g", "", "orders")
			oc := kmsg.NewPtrOffsetCommitRequest()
			oc.Version, oc.Group, oc.MemberID, oc.Generation = 5, "g", j.MemberID, j.Generation
			oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 2, Offset: 3}}}}
			require.Zero(t, call[*kmsg.OffsetCommitResponse](e, "c", oc).Topics[0].Partitions[0].ErrorCode)
			pid, epoch := e.txnInit("tx")
			ao := kmsg.NewPtrAddOffsetsToTxnRequest()
			ao.Version, ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = 3, "tx", pid, epoch, "g"
			require.Zero(t, call[*kmsg.AddOffsetsToTxnResponse](e, "p", ao).ErrorCode)
			tc3 := kmsg.NewPtrTxnOffsetCommitRequest()
			tc3.Version, tc3.TransactionalID, tc3.ProducerID, tc3.ProducerEpoch = 3, "tx", pid, epoch
			tc3.Group, tc3.MemberID, tc3.Generation = "g", j.MemberID, j.Generation
			tc3.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "orders", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 2, Offset: 7, LeaderEpoch: -1}}}}
			require.Zero(t, call[*kmsg.TxnOffsetCommitResponse](e, "p", tc3).Topics[0].Partitions[0].ErrorCode)

			addr := e.serve()
			consumer, producer := wiretest.Dial(t, addr, "c"), wiretest.Dial(t, addr, "p")
			flat := func(resp kmsg.Response) []wiretest.Offset {
				r := resp.(*kmsg.OffsetFetchResponse)
				if tc.version >= 8 {
					require.Len(t, r.Groups, 1)
					return wiretest.FetchedGroupOffsets(r.Groups[0].Topics)
				}
				return wiretest.FetchedOffsets(r.Topics)
			}
			type answer struct {
				resp kmsg.Response
				err  error
			}
			answered := make(chan answer, 1)
			store.armed.Store(true)
			go func() {
				ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
				defer cancel()
				resp, err := consumer.Request(ctx, fetches[tc.fetch](tc.version))
				answered <- answer{resp, err}
			}()
			select {
			case <-store.read:
			case <-time.After(testTimeout):
				t.Fatal("the fetch did not read the committed offsets")
			}
			end := kmsg.NewPtrEndTxnRequest()
			end.Version, end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = 3, "tx", pid, epoch, true
			require.Zero(t, wiretest.Do[*kmsg.EndTxnResponse](t, producer, end).ErrorCode)
			close(store.release)
			var got answer
			select {
			case got = <-answered:
			case <-time.After(testTimeout):
				t.Fatal("the fetch was not answered")
			}
			require.NoError(t, got.err)
			require.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 2, Offset: -1, LeaderEpoch: -1, ErrorCode: kerr.UnstableOffsetCommit.Code}}, flat(got.resp),
				"the fetch raced the commit: unstable, not the offset before it")
			require.Equal(t, []wiretest.Offset{{Topic: "orders", Partition: 2, Offset: 7, LeaderEpoch: -1}}, flat(wiretest.Do[*kmsg.OffsetFetchResponse](t, consumer, fetches[tc.fetch](tc.version))))
		})
	}
}
