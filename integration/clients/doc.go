// Package clients drives a broker with the real Kafka clients minibroker is
// judged by: sarama, segmentio kafka-go, librdkafka (through
// confluent-kafka-go), kcat and kafkajs, with kadm reading back what they
// commit.
//
// The tests talk to the broker only over loopback sockets, through the
// address startBroker (broker_test.go) returns. Until minibroker stores
// records, startBroker runs kfake, franz-go's in-memory Kafka; switching it to
// minibroker's embedded broker is a change to that one function.
// observe_test.go is the exception: it hooks kfake's request handling to
// record what each client sends, and stays on kfake.
//
// Each client's debug output is collected per test and written to the
// test's output only when the test fails (CLIENTS_LOG=1 writes it always).
// The kcat tests need Debian's kcat on PATH (scripts/kcat.sh installs it)
// and skip under -short. The kafkajs test needs node on PATH (it skips
// without it, and under -short) and kafkajs in .cache/kafkajs, which
// scripts/kafkajs.sh installs from the npm registry (make test runs it, and
// so does the test). It reaches the broker through a wire tap
// (wiretap_test.go) that records what kafkajs commits and fetches.
package clients
