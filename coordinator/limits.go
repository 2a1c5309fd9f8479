package coordinator

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

// Limits on what a peer can make the coordinator hold, beyond those in
// Config. docs/reliability.md lists each limit with the test that shows it.
const (
	// MemberIDSlackBytes is how much longer than Config.MaxIDBytes a
	// member id may be: room for the "-<sequence>" that newMemberID
	// appends to a client id.
	MemberIDSlackBytes = 32
	// MaxIDBytesLimit is the largest Config.MaxIDBytes: the protocol's
	// string length (int16) less MemberIDSlackBytes.
	MaxIDBytesLimit = 32767 - MemberIDSlackBytes
)

// Defaults of Config's limits.
const (
	// DefaultMaxGroupSize is Config.MaxGroupSize's default. Kafka's
	// group.max.size defaults to 2147483647; here every join that changes
	// a group rebalances it whole, under the coordinator's one lock, in
	// time that grows with its members and partitions, and every other
	// group's heartbeats wait for it. A rebalance of 1000 members takes
	// about 1 ms over 100 partitions and 8 ms over 10,000 on the 2-core
	// development machine (loadgen.MeasureRebalance, make bench), so 1000
	// bounds that wait while staying far beyond any group this broker is
	// meant for.
	DefaultMaxGroupSize = 1000
	// DefaultMaxGroups is Config.MaxGroups's default. Kafka has no limit,
	// but it deletes empty groups once their offsets expire; here groups
	// are deleted only on request (DeleteGroups) or by
	// Config.OffsetsRetention, which is off by default, so without a bound
	// a client inventing group ids would grow the broker without end.
	// 100,000 is ten times the largest benchmark scenario.
	DefaultMaxGroups = 100_000
	// DefaultMaxIDBytes is Config.MaxIDBytes's default. Kafka bounds ids
	// only by the protocol's 32767 bytes; minibroker keeps every id it is
	// sent (in memory, in offsets.json, in its logs and on the admin
	// page), and no client sends ids anywhere near 255 bytes (kgo's
	// default client id is "kgo", the Java client's
	// "consumer-<group>-<n>").
	DefaultMaxIDBytes = 255
)

// ValidateGroupID checks a group id that names a group to join or act in:
// not empty (Kafka's INVALID_GROUP_ID rule for JoinGroup, SyncGroup,
// Heartbeat and LeaveGroup), at most Config.MaxIDBytes, and text (see
// validText). It returns an error wrapping ErrInvalidGroupID.
func (c *Coordinator) ValidateGroupID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty group id", ErrInvalidGroupID)
	}
	return c.checkGroupID(id)
}

// checkGroupID is ValidateGroupID without the emptiness rule: OffsetCommit
// accepts the empty group id, as Kafka does.
func (c *Coordinator) checkGroupID(id string) error {
	if len(id) > c.maxIDBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidGroupID, len(id), c.maxIDBytes)
	}
	if !validText(id) {
		return fmt.Errorf("%w: %q is not UTF-8 text without control characters", ErrInvalidGroupID, id)
	}
	return nil
}

// checkMemberID bounds a member id a client sent, to Config.MaxIDBytes
// plus MemberIDSlackBytes. The empty id is left to the caller: it asks
// for a new id in a join and is simply unknown elsewhere.
func (c *Coordinator) checkMemberID(id string) error {
	if limit := c.maxIDBytes + MemberIDSlackBytes; len(id) > limit {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidMemberID, len(id), limit)
	}
	if !validText(id) {
		return fmt.Errorf("%w: %q is not UTF-8 text without control characters", ErrInvalidMemberID, id)
	}
	return nil
}

// checkIDs checks the group id and member id of a request that acts in a
// group: SyncGroup and Heartbeat.
func (c *Coordinator) checkIDs(group, memberID string) error {
	if err := c.ValidateGroupID(group); err != nil {
		return err
	}
	return c.checkMemberID(memberID)
}

// checkJoinerIDs bounds the ids a member joins with, in JoinGroup and in
// ConsumerGroupHeartbeat alike: its member id, client id and group
// instance id, in that order.
func (c *Coordinator) checkJoinerIDs(memberID, clientID, instanceID string) error {
	if err := c.checkMemberID(memberID); err != nil {
		return err
	}
	if err := c.checkClientID(clientID); err != nil {
		return err
	}
	return c.checkInstanceID(instanceID)
}

// checkClientID bounds the client id a join records to Config.MaxIDBytes.
func (c *Coordinator) checkClientID(id string) error {
	if len(id) > c.maxIDBytes {
		return fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidClientID, len(id), c.maxIDBytes)
	}
	if !validText(id) {
		return fmt.Errorf("%w: %q is not UTF-8 text without control characters", ErrInvalidClientID, id)
	}
	return nil
}

// validText reports whether s is valid UTF-8 without control characters
// (C0, DEL, C1). offsets.json can hold only UTF-8, and a control character
// in an id would garble the logs and the admin page; no client generates
// either. Every Heartbeat, SyncGroup and OffsetCommit checks its ids, which
// are ASCII in practice: printable ASCII is answered byte by byte, in one
// pass, and only what follows the first non-ASCII byte is decoded.
func validText(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return validUTF8Text(s[i:])
		case c < ' ' || c == 0x7f: // C0, DEL
			return false
		}
	}
	return true
}

// validUTF8Text is validText for any s, decoding it rune by rune.
func validUTF8Text(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// admitGroup records group as known, or refuses it when it is new and the
// coordinator already knows MaxGroups groups. Every group that exists
// (with members, pending ids, a history of them, or committed offsets)
// counts, until it is deleted (delete.go, retention.go). Called with mu
// held.
func (c *Coordinator) admitGroup(group string) error {
	if _, ok := c.known[group]; ok {
		return nil
	}
	if len(c.known) >= c.maxGroups {
		return fmt.Errorf("%w: %q would be group %d, limit %d", ErrTooManyGroups, group, len(c.known)+1, c.maxGroups)
	}
	c.known[group] = struct{}{}
	return nil
}

// admitMember refuses a join that would add a member or a pending member
// id to a group that holds maxGroupSize of them already. Re-joins of
// members, and pending ids taking the place they hold, are always
// admitted. Kafka counts only members (ClassicGroup.numMembers); pending
// ids count here too, since each is held for a whole session timeout and
// would otherwise be unbounded. Called with mu held.
func (c *Coordinator) admitMember(g *group, memberID string) error {
	if _, ok := g.members[memberID]; ok {
		return nil
	}
	if _, ok := g.pending[memberID]; ok && memberID != "" {
		return nil
	}
	if n := len(g.members) + len(g.pending); n >= c.maxGroupSize {
		return fmt.Errorf("%w: group %q holds %d members and pending ids, limit %d", ErrGroupMaxSizeReached, g.id, n, c.maxGroupSize)
	}
	return nil
}
