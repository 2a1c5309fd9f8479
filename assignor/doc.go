// Package assignor computes the chapter's deterministic round-robin
// assignment of topic partitions to the members of a consumer group.
//
// It is a pure function of its input and imports only the standard library:
// nothing of minibroker, no clock, no I/O. Sorting removes arrival-order and
// map-order accidents, so the same members, subscriptions and topic sizes
// always give the same assignment (book chapter 7, "Assignment is
// deterministic and subscription-aware").
package assignor
