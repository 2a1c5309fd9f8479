package protocol

// VersionRange is the inclusive range of versions we support for one API key,
// as advertised in an ApiVersions response entry.
type VersionRange struct {
	Key int16
	Min int16
	Max int16
}

// supportedVersions is the one table of what we implement (docs/design.md
// section 4), sorted by key. It is never modified: callers get copies. Not
// listed, so never advertised: the versions that name topics only by id
// (Produce v13+, Fetch v13+, OffsetCommit and OffsetFetch v10+) and
// transaction.version 2 (EndTxn v5: clients then add partitions to their
// transactions themselves). Produce v3+ is advertised beside Fetch v4+:
// librdkafka enables record batches (and fetches at all) only when it
// sees both. ConsumerGroupHeartbeat v1 is what makes kgo use the KIP-848
// protocol (with kgo.ServerSideBalancer; docs/design.md section 9).
//
// Lower bounds: OffsetFetch v0 read offsets from ZooKeeper and Fetch v0-3
// and Produce v0-2 predate the record batch format, so none is served.
var supportedVersions = [...]VersionRange{
	{Key: 0, Min: 3, Max: 12}, // Produce; v3 is the first of record batches, v13+ uses topic ids
	{Key: 1, Min: 4, Max: 12}, // Fetch; v13+ uses topic ids
	{Key: 2, Min: 0, Max: 7},  // ListOffsets
	{Key: 3, Min: 0, Max: 12}, // Metadata; v10+ topic ids; v13 adds a top-level error code
	{Key: 8, Min: 0, Max: 9},  // OffsetCommit
	{Key: 9, Min: 1, Max: 9},  // OffsetFetch; v8+ batches groups
	{Key: 10, Min: 0, Max: 6}, // FindCoordinator; v4+ batches keys
	{Key: 11, Min: 0, Max: 9}, // JoinGroup; v4+ MEMBER_ID_REQUIRED
	{Key: 12, Min: 0, Max: 4}, // Heartbeat
	{Key: 13, Min: 0, Max: 5}, // LeaveGroup; v3+ batches members
	{Key: 14, Min: 0, Max: 5}, // SyncGroup
	{Key: 15, Min: 0, Max: 5}, // DescribeGroups
	{Key: 16, Min: 0, Max: 5}, // ListGroups
	{Key: 17, Min: 0, Max: 1}, // SaslHandshake; v0 is followed by bare SASL tokens, v1 by SaslAuthenticate
	{Key: 18, Min: 0, Max: 4}, // ApiVersions; v5 adds ClusterID/NodeID
	{Key: 19, Min: 0, Max: 7}, // CreateTopics
	{Key: 20, Min: 1, Max: 6}, // DeleteTopics; v6 by topic id (Kafka 4 dropped v0)
	{Key: 21, Min: 0, Max: 2}, // DeleteRecords
	{Key: 22, Min: 0, Max: 4}, // InitProducerId; v5 adds transaction.version 2
	{Key: 24, Min: 0, Max: 3}, // AddPartitionsToTxn; v4+ is broker to broker (KIP-890)
	{Key: 25, Min: 0, Max: 3}, // AddOffsetsToTxn; v4 adds TRANSACTION_ABORTABLE
	{Key: 26, Min: 0, Max: 3}, // EndTxn; v4 TRANSACTION_ABORTABLE, v5 transaction.version 2: not served
	{Key: 28, Min: 0, Max: 3}, // TxnOffsetCommit; v3 carries generation and member id (KIP-447)
	{Key: 32, Min: 0, Max: 4}, // DescribeConfigs; v1 synonyms and source, v3 type and documentation
	{Key: 33, Min: 0, Max: 2}, // AlterConfigs
	{Key: 36, Min: 0, Max: 2}, // SaslAuthenticate; v1 session lifetime, v2 flexible
	{Key: 37, Min: 0, Max: 3}, // CreatePartitions
	{Key: 42, Min: 0, Max: 2}, // DeleteGroups; v3 adds error messages
	{Key: 44, Min: 0, Max: 1}, // IncrementalAlterConfigs
	{Key: 47, Min: 0, Max: 0}, // OffsetDelete (KIP-496)
	{Key: 60, Min: 0, Max: 2}, // DescribeCluster (KIP-700); v1 endpoint type, v2 fenced brokers
	{Key: 65, Min: 0, Max: 0}, // DescribeTransactions (KIP-664)
	{Key: 66, Min: 0, Max: 1}, // ListTransactions (KIP-664); v1 duration filter (KIP-994), v2 id pattern: not served
	{Key: 68, Min: 0, Max: 1}, // ConsumerGroupHeartbeat (KIP-848); v1 client-made member ids
	{Key: 69, Min: 0, Max: 1}, // ConsumerGroupDescribe (KIP-848)
}

// VersionsFor returns the range we support for key, and false when we do
// not implement the API at all.
func VersionsFor(key int16) (VersionRange, bool) {
	for _, r := range supportedVersions {
		if r.Key == key {
			return r, true
		}
	}
	return VersionRange{}, false
}

// Supported reports whether we implement version of the API key.
func Supported(key, version int16) bool {
	r, ok := VersionsFor(key)
	return ok && version >= r.Min && version <= r.Max
}

// SupportedVersions returns a copy of the whole table, sorted by key: the
// ApiKeys of our ApiVersions response.
func SupportedVersions() []VersionRange {
	out := supportedVersions // copies the array
	return out[:]
}
