// Package assignor computes consumer-group assignments: the chapter's
// deterministic round-robin (RoundRobin), which every classic group and a
// KIP-848 group asking for "uniform" or no assignor get, and Kafka's
// server-side range (Range), for a KIP-848 group asking for "range".
//
// Both are pure functions of their input and import only the standard
// library: nothing of minibroker, no clock, no I/O. Sorting removes
// arrival-order and map-order accidents, so the same members,
// subscriptions and topic sizes always give the same assignment (book
// chapter 7, "Assignment is deterministic and subscription-aware").
package assignor
