// Package coordinator is the chapter's synchronous consumer-group
// coordinator (book chapter 7): membership, generations, the group state
// machine, session leases, commit fencing and expiry, in plain Go types.
//
// A join completes a rebalance at once: PreparingRebalance, generation+1,
// then the round-robin assignment and Stable, or Empty when no member is
// left. The coordinator computes every assignment itself; no client plan is
// used. Generations fence stale heartbeats and commits, an ownership check
// fences commits for partitions the member does not own, and sessions are
// leases that end only inside Expire.
//
// Consumer groups (consumer.go) speak KIP-848's ConsumerGroupHeartbeat
// over the same rules: the group epoch plays the generation, every
// membership or subscription change computes the whole target assignment
// on the same synchronous rebalance path, and a member moves to the group
// epoch, with its whole new assignment, at its own next heartbeat. A group
// is of one type at a time (GroupType); an Empty group takes the type of
// its next join.
//
// Member identity (static.go, consumer_static.go, consumer_regex.go): a
// group instance id answers the chapter's "who are you?" across restarts
// (KIP-345, and instance ids under KIP-848), so a restarted static member
// takes its old place at the same generation, and a request from the
// incarnation it replaced is ErrFencedInstanceID, asked before the
// chapter's checks; the generation still answers "which assignment
// version are you acting under?". Consumer-group members may subscribe
// with a regex, resolved against the catalog at every heartbeat.
//
// Groups are deleted only on request (DeleteGroups, DeleteOffsets of a
// group's last offset; delete.go) or by offsets retention, which is off
// by default (Config.OffsetsRetention; retention.go, run by Expire), as
// Kafka's DeleteGroups, OffsetDelete and offset expiration do.
//
// What a peer can make the coordinator hold is bounded (limits.go): the
// members of a group (Config.MaxGroupSize), the number of groups
// (Config.MaxGroups), the length and characters of ids, commit metadata
// (Config.MaxMetadataBytes) and the partitions of the catalog.
//
// Concurrency: every exported method takes mu, works and returns. Nothing
// here blocks, parks, starts goroutines or timers, or reads the time other
// than through the injected Clock. A group commit is validated and ordered
// under mu (it is enqueued in the offset store there) and waited for after
// mu is released, so one group's fsync never stalls another group's
// heartbeat, and a commit validated before a membership change is always
// applied before a commit validated after it. Deletions of offsets are
// ordered and awaited the same way; after each wait, mu is taken once more
// to count the operation as done (track). The store's own lock is taken
// only after mu, never the other way round. Watchers (Changed, watch.go)
// are woken by closing a channel held in an atomic pointer, never by a
// lock of their own, and never block the method that wakes them.
//
// The package must not import kmsg, kerr, net or server: the wire lives in
// server, which maps this package's errors to Kafka codes.
package coordinator
