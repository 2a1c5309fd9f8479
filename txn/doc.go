// Package txn is the transaction coordinator (KIP-98, KIP-447) of a
// single broker: transactional ids with their producer ids and epochs,
// the state of each one's transaction, its partitions and groups, and a
// durable transaction log (journal.go) in the data directory.
//
// # Rules
//
// InitProducerID hands a transactional id the same producer id at the
// next epoch, which fences every older epoch; an open transaction is
// aborted first. AddPartitions and AddOffsets begin a transaction; a
// transactional produce (Produce) and a transactional offset commit
// (StageOffsets) are accepted only inside it. EndTxn makes the decision
// durable, then writes a marker to every partition of the transaction
// (records.Log.AppendMarker) and applies or discards the offsets the
// group coordinator staged, and answers once all of it is durable.
// Expire aborts every transaction open longer than its timeout at a
// bumped epoch: the manual clock drives it, as it drives sessions.
//
// # Durability
//
// The journal holds five kinds of record: init (an id's producer id,
// epoch, timeout), begin (a transaction started), end (the decision, with
// its partitions and the offsets it commits), done (the decision is
// applied everywhere) and expire (an idle id is forgotten). Each is
// synced before what it describes is acknowledged. New replays it: a
// decision without its done is completed again, a begin without a
// decision is aborted at a bumped epoch (all of them with one sync), and
// the partition logs' open transactions that nobody owns get abort
// markers, so no transaction stays half visible across a crash. A
// decision the broker made never stops a start: one that cannot complete
// is retried by the expiry step, with backoff. The journal is rewritten
// from its own records once its garbage passes its live records
// (compact.go), in the background.
//
// # Concurrency
//
// One mutex guards every transactional id. The durable steps of an end
// run outside it, while the transaction's Prepare state answers other
// requests for it with ErrConcurrentTransactions. Lock order: the
// coordinator's mutex, then the group coordinator's (StageOffsets), then a
// partition's (Produce appends under the mutex, so no marker can slip
// between a produce's check and its append); the journal's mutex is
// taken last, and a rewrite of the journal takes only it.
//
// # Boundaries
//
// The package imports records and offsets, and no networking: the server
// maps its errors to Kafka codes.
package txn
