package clients

// SASL with real clients: kgo's sasl/plain and sasl/scram packages (a
// producer and a consumer group, over plaintext and over TLS), librdkafka
// and kcat with security.protocol=SASL_PLAINTEXT, and a wrong password.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/minibroker/minibroker/broker"
	"github.com/minibroker/minibroker/broker/adminapi"
	"github.com/minibroker/minibroker/internal/testutil"
)

// saslUsers are the users of every SASL broker here.
var saslUsers = map[string]string{"alice": "alice-secret", "bob": "bob-secret"}

// saslKgo returns a kgo client for addr authenticating with mech, with
// opts added; closed at cleanup.
func saslKgo(t *testing.T, addr string, mech sasl.Mechanism, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	log := newClientLog(t, "kgo "+mech.Name())
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.SASL(mech), kgo.WithLogger(kgoLogger(log, kgo.LogLevelInfo))}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// saslProduceConsume produces n records as producer and consumes them
// all with a consumer group as consumer, which commits them; it returns
// the values consumed, in order per partition 0.
func saslProduceConsume(t *testing.T, addr string, producer, consumer sasl.Mechanism, n int, opts ...kgo.Opt) {
	t.Helper()
	p := saslKgo(t, addr, producer, append([]kgo.Opt{kgo.DefaultProduceTopic("orders")}, opts...)...)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Key: []byte("k"), Value: fmt.Appendf(nil, "order-%d", i)})
	}
	if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce over SASL %s: %v", producer.Name(), err)
	}
	c := saslKgo(t, addr, consumer, append([]kgo.Opt{kgo.ConsumeTopics("orders"), kgo.ConsumerGroup("sasl-group"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond)}, opts...)...)
	var got []string
	for len(got) < n {
		fetches := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("consumed %d of %d records over SASL %s: %v", len(got), n, consumer.Name(), err)
		}
		fetches.EachError(func(topic string, p int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, p, err) })
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	want := make([]string, n)
	for i := range n {
		want[i] = fmt.Sprintf("order-%d", i)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("consumed %v, want %v", got, want)
	}
	if err := c.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("commit over SASL: %v", err)
	}
	adm := kadm.NewClient(saslKgo(t, addr, consumer, opts...))
	offs, err := adm.FetchOffsets(ctx, "sasl-group")
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, ps := range offs {
		for _, o := range ps {
			sum += o.At
		}
	}
	if sum != int64(n) {
		t.Fatalf("committed offsets sum to %d, want %d", sum, n)
	}
}

// TestSASLKgoGroup: a kgo producer on SCRAM-SHA-256 and a consumer group
// on SCRAM-SHA-512 and on PLAIN produce, consume and commit; the admin
// API lists the consumer's connections with its user and mechanism.
func TestSASLKgoGroup(t *testing.T) {
	t.Parallel()
	addr := startBrokerWith(t, broker.Config{Topics: map[string]int32{"orders": 1}, SASLUsers: saslUsers, Admin: "127.0.0.1:0", AdminAPI: adminapi.New})
	saslProduceConsume(t, addr, scram.Auth{User: "alice", Pass: "alice-secret"}.AsSha256Mechanism(),
		scram.Auth{User: "bob", Pass: "bob-secret"}.AsSha512Mechanism(), 5, kgo.ClientID("scram-app"))

	b, _ := brokers.Load(addr)
	url := "http://" + b.(*broker.Broker).AdminAddr() + "/v1/connections"
	poll(t, "the admin API names bob's connections", func(ctx context.Context) (bool, string) {
		req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var body struct {
			Connections []struct {
				ClientID  string `json:"client_id"`
				User      string `json:"user"`
				Mechanism string `json:"mechanism"`
			} `json:"connections"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			return false, err.Error()
		}
		for _, c := range body.Connections {
			if c.ClientID == "scram-app" && c.User == "bob" && c.Mechanism == "SCRAM-SHA-512" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("connections %+v", body.Connections)
	})
}

// TestSASLKgoPlainOverTLS: SASL_SSL: PLAIN over TLS, producer and group.
func TestSASLKgoPlainOverTLS(t *testing.T) {
	t.Parallel()
	pki := testutil.NewPKI(t)
	addr := startBrokerWith(t, broker.Config{Topics: map[string]int32{"orders": 1}, SASLUsers: saslUsers, TLS: pki.ServerConfig(false)})
	alice := plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()
	saslProduceConsume(t, addr, alice, alice, 3, kgo.DialTLSConfig(pki.ClientConfig(false)))
}

// TestSASLKgoWrongPassword: kgo reports SASL_AUTHENTICATION_FAILED for
// a wrong password, with either mechanism.
func TestSASLKgoWrongPassword(t *testing.T) {
	t.Parallel()
	addr := startBrokerWith(t, broker.Config{Topics: map[string]int32{"orders": 1}, SASLUsers: saslUsers})
	for _, mech := range []sasl.Mechanism{plain.Auth{User: "alice", Pass: "nope"}.AsMechanism(), scram.Auth{User: "alice", Pass: "nope"}.AsSha256Mechanism()} {
		cl := saslKgo(t, addr, mech, kgo.RequestRetries(0))
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		_, err := kadm.NewClient(cl).ListTopics(ctx)
		cancel()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) {
			t.Fatalf("%s with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", mech.Name(), err)
		}
	}
}

// saslEndOffset reads the end offset of orders-0 over SASL PLAIN.
func saslEndOffset(t *testing.T, addr string) int64 {
	t.Helper()
	adm := kadm.NewClient(saslKgo(t, addr, plain.Auth{User: "alice", Pass: "alice-secret"}.AsMechanism()))
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	ends, err := adm.ListEndOffsets(ctx, "orders")
	if err != nil {
		t.Fatal(err)
	}
	o, _ := ends.Lookup("orders", 0)
	return o.Offset
}

// TestSASLLibrdkafka: librdkafka produces with security.protocol
// SASL_PLAINTEXT, PLAIN and SCRAM-SHA-512.
func TestSASLLibrdkafka(t *testing.T) {
	t.Parallel()
	addr := startBrokerWith(t, broker.Config{Topics: map[string]int32{"orders": 1}, SASLUsers: saslUsers})
	for i, mech := range []string{"PLAIN", "SCRAM-SHA-512"} {
		rdkafkaProduce(kafka.ConfigMap{"security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mech,
			"sasl.username": "bob", "sasl.password": "bob-secret"})(t, addr, "orders", []kv{{Key: []byte("k"), Value: []byte(mech)}})
		if got := saslEndOffset(t, addr); got != int64(i+1) {
			t.Fatalf("after librdkafka's %s produce the end offset is %d, want %d", mech, got, i+1)
		}
	}
}

// TestSASLKcat: kcat -L and -P with -X security.protocol=SASL_PLAINTEXT.
func TestSASLKcat(t *testing.T) {
	t.Parallel()
	kcatPath(t)
	addr := startBrokerWith(t, broker.Config{Topics: map[string]int32{"orders": 1}, SASLUsers: saslUsers})
	auth := []string{"-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", "sasl.password=alice-secret"}
	out := kcat(t, append([]string{"-b", addr, "-L", "-J"}, auth...)...)
	var md kcatMetadata
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != "orders" {
		t.Fatalf("kcat -L over SASL lists %+v, want orders", md.Topics)
	}
	kcatProduce("security.protocol=SASL_PLAINTEXT", "sasl.mechanisms=PLAIN", "sasl.username=bob", "sasl.password=bob-secret")(
		t, addr, "orders", []kv{{Key: []byte("k1"), Value: []byte("hello")}, {Key: []byte("k2"), Value: []byte("world")}})
	if got := saslEndOffset(t, addr); got != 2 {
		t.Fatalf("after kcat -P the end offset is %d, want 2", got)
	}
}

// TestKadmDescribeCluster: DescribeCluster through kgo (the version it
// negotiates) agrees with kadm's BrokerMetadata (Metadata): the cluster
// id, this node as the controller and the only broker, at its address.
func TestKadmDescribeCluster(t *testing.T) {
	t.Parallel()
	addr := startBroker(t, map[string]int32{"orders": 1})
	log := newClientLog(t, "kgo describe cluster")
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.WithLogger(kgoLogger(log, kgo.LogLevelInfo)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || resp.ClusterID != md.Cluster || resp.ClusterID != "minibroker" || resp.ControllerID != md.Controller || resp.ControllerID != 0 {
		t.Fatalf("DescribeCluster v%d: code %d, cluster %q, controller %d; Metadata: cluster %q, controller %d",
			resp.Version, resp.ErrorCode, resp.ClusterID, resp.ControllerID, md.Cluster, md.Controller)
	}
	if resp.Version != 2 {
		t.Fatalf("kgo negotiated DescribeCluster v%d, want 2", resp.Version)
	}
	if len(resp.Brokers) != 1 || len(md.Brokers) != 1 || resp.Brokers[0].Host != md.Brokers[0].Host || resp.Brokers[0].Port != md.Brokers[0].Port || resp.Brokers[0].NodeID != 0 {
		t.Fatalf("DescribeCluster brokers %+v, Metadata brokers %+v", resp.Brokers, md.Brokers)
	}
	if fmt.Sprintf("%s:%d", resp.Brokers[0].Host, resp.Brokers[0].Port) != addr {
		t.Fatalf("DescribeCluster names %s:%d, the broker is at %s", resp.Brokers[0].Host, resp.Brokers[0].Port, addr)
	}
}
