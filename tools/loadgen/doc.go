// Package loadgen is minibroker's load generator: raw kmsg requests over
// TCP, N connections, M groups of K members on a topic of P partitions,
// any number of requests in flight per connection. It joins members the
// way Kafka clients do (MEMBER_ID_REQUIRED, JoinGroup, SyncGroup with a
// leader plan, re-join on REBALANCE_IN_PROGRESS), so the same scenarios
// run against minibroker's synchronous coordinator and against kfake's
// join barrier, and measures throughput, per-request latency (a
// log-bucketed histogram), every non-zero error code and, through /proc,
// the server process's CPU time and memory.
//
// The records kinds (Produce, ProduceSync, Consume, EndToEnd) drive a
// stock kgo client instead: producers through one client, a consumer
// reading a prefilled topic, a paced producer and a group member; they
// measure records and value bytes per second and per-record latency.
//
// It also holds the floor server (ServeFloor): the Kafka framing with no
// coordinator behind it, the reference any coordinator's cost is measured
// against, which is also the disk floor for producers (a Produce appends
// its batches to one file and fdatasyncs it once, nothing else), and
// MeasureSync, the same append and sync timed in this process; in-process starters for minibroker, kfake and the floor; and
// in-process measurements of the coordinator (rebalance time, memory per
// idle member). cmd/minibench drives it; docs/performance.md explains the
// numbers.
//
// Only benchmarks and tests use it: nothing in the broker imports it.
package loadgen
