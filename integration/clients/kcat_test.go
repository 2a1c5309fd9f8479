package clients

// kcat 1.7.1, Debian's package (librdkafka 2.0.2 builtin), run as a child
// process. make test installs it first (scripts/kcat.sh). Its producer is
// librdkafka's with kcat's defaults: not idempotent, partitioner
// consistent_random. Its -G consumer starts at the latest offset when the
// group has no commit (librdkafka's default) and commits automatically, and
// once more when it closes (at -e, -c or SIGTERM).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kcatFormat is the -f output format the tests parse: partition, offset,
// key and value, tab-separated.
const kcatFormat = `%p\t%o\t%k\t%s\n`

// kcatPath finds kcat on PATH or fails with what to do.
func kcatPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs kcat")
	}
	path, err := exec.LookPath("kcat")
	if err != nil {
		t.Fatalf("kcat is not on PATH (%v): run scripts/kcat.sh (make test does) or use -short to skip the kcat tests", err)
	}
	return path
}

// kcat runs kcat with args to completion within waitTimeout, its stderr in
// the test's kcat log, and returns its stdout.
func kcat(t *testing.T, args ...string) []byte {
	t.Helper()
	log := newClientLog(t, "kcat "+strings.Join(args, " "))
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath(t), args...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = log
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (context: %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), log.String())
	}
	return stdout.Bytes()
}

// kcatProduce writes recs to a file as key:value lines and produces it with
// kcat -P -l, with kcat's defaults plus extra -X settings.
func kcatProduce(extra ...string) func(t *testing.T, addr, topic string, recs []kv) {
	return func(t *testing.T, addr, topic string, recs []kv) {
		t.Helper()
		var lines bytes.Buffer
		for _, r := range recs {
			fmt.Fprintf(&lines, "%s:%s\n", r.Key, r.Value)
		}
		file := filepath.Join(t.TempDir(), "records.txt")
		if err := os.WriteFile(file, lines.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"-b", addr, "-P", "-t", topic, "-K", ":", "-X", "client.id=kcat-producer"}
		for _, x := range extra {
			args = append(args, "-X", x)
		}
		kcat(t, append(args, "-l", file)...)
	}
}

// kcatGroupArgs are the -G consumer's arguments: earliest start (the
// default, latest, would race the producer), the test's heartbeat, fetches
// that wait at most 100 ms for data (kcat's close waits for the fetch in
// flight), partition/offset/key/value lines, unbuffered. The auto commit interval
// stays librdkafka's 5 s: kcat 1.7.1 applies -X auto.commit.interval.ms to
// the deprecated topic-level property of that name (-X dump shows both), so
// the scenarios' waits for kcat's commits take up to 5 s.
func kcatGroupArgs(addr, group, id string) []string {
	return []string{
		"-b", addr, "-G", group, "-q", "-u", "-f", kcatFormat,
		"-X", "client.id=" + id,
		"-X", "auto.offset.reset=earliest",
		"-X", "heartbeat.interval.ms=" + strconv.Itoa(int(heartbeat/time.Millisecond)),
		"-X", "fetch.wait.max.ms=100",
	}
}

// parseKcat parses one kcatFormat line into a record consumed by id.
func parseKcat(id, line string) (consumed, error) {
	f := strings.Split(line, "\t")
	if len(f) != 4 {
		return consumed{}, fmt.Errorf("kcat %s printed %q, want partition, offset, key, value", id, line)
	}
	p, err1 := strconv.ParseInt(f[0], 10, 32)
	o, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return consumed{}, fmt.Errorf("kcat %s printed %q", id, line)
	}
	return consumed{id, int32(p), o, []byte(f[2]), []byte(f[3])}, nil
}

// kcatJoin returns a joinFunc running kcat -G as a long-lived member that
// resets to policy (auto.offset.reset); leave sends it SIGTERM, on which
// kcat closes its consumer (a final commit, then LeaveGroup) and exits.
func kcatJoin(policy string) joinFunc {
	return func(t *testing.T, addr, group, topic, id string, l *ledger) func() {
		return kcatMember(t, addr, group, topic, id, l, policy)
	}
}

func kcatMember(t *testing.T, addr, group, topic, id string, l *ledger, policy string) func() {
	t.Helper()
	log := newClientLog(t, "kcat "+id)
	args := append(kcatGroupArgs(addr, group, id), "-X", "auto.offset.reset="+policy, "-d", "cgrp", topic)
	cmd := exec.Command(kcatPath(t), args...)
	cmd.Stderr = log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("kcat: %v", err)
	}
	read := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c, err := parseKcat(id, sc.Text())
			if err != nil {
				read <- err
				return
			}
			l.add(c)
		}
		read <- sc.Err()
	}()
	leave := sync.OnceFunc(func() {
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Errorf("kcat %s: SIGTERM: %v", id, err)
		}
		exited := make(chan error, 1)
		go func() {
			err := <-read // stdout closed: kcat is exiting
			if werr := cmd.Wait(); err == nil {
				err = werr
			}
			exited <- err
		}()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("kcat %s: %v", id, err)
			}
		case <-time.After(waitTimeout):
			_ = cmd.Process.Kill()
			t.Errorf("kcat %s did not exit within %v of SIGTERM", id, waitTimeout)
			<-exited
		}
	})
	t.Cleanup(leave)
	return leave
}

func kcatClient() client {
	return client{name: "kcat", produce: kcatProduce(), join: kcatJoin("earliest"), reset: kcatJoin}
}

// TestKcatProduceFromFile: kcat -P -l sends a file of 200 key:value lines;
// each lands once, in order, on the partition consistent_random picks (CRC-32
// of the key mod 4), with a producer id only with enable.idempotence=true.
func TestKcatProduceFromFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		extra      []string
		idempotent bool
	}{
		{"defaults", nil, false},
		{"idempotent", []string{"enable.idempotence=true"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startBroker(t, map[string]int32{topic: partitions})
			adm := newAdmin(t, addr)
			want := makeRecords(0, 200)
			kcatProduce(tc.extra...)(t, addr, topic, want)
			byKey := checkStored(t, readTopic(t, addr, adm, topic, len(want)), want)
			for _, r := range want {
				s := byKey[string(r.Key)]
				if p := int32(crc32.ChecksumIEEE(r.Key) % partitions); s.Partition != p {
					t.Errorf("%s on partition %d, consistent_random says %d", r.Key, s.Partition, p)
				}
				if got := s.ProducerID >= 0; got != tc.idempotent {
					t.Errorf("%s: producer id %d, idempotent %v", r.Key, s.ProducerID, tc.idempotent)
				}
			}
		})
	}
}

// TestKcatGroupConsume: one kcat -G member reads the topic through a group,
// bounded by -e (exit at the end of every assigned partition) or by -c (a
// record count), and a timeout. It prints each record once, in order within
// its partition, and leaves committed the last printed offset + 1 of every
// partition it read.
func TestKcatGroupConsume(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		bound []string
		count int
	}{
		{"end", []string{"-e"}, 200},
		{"count", []string{"-c", "120"}, 120},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := startBroker(t, map[string]int32{topic: partitions})
			adm := newAdmin(t, addr)
			want := makeRecords(0, 200)
			kcatProduce()(t, addr, topic, want)
			st := readTopic(t, addr, adm, topic, len(want))

			group := "kcat-" + tc.name
			args := append(kcatGroupArgs(addr, group, "kcat-a"), tc.bound...)
			out := kcat(t, append(args, topic)...)
			var got []consumed
			for line := range strings.Lines(string(out)) {
				c, err := parseKcat("kcat-a", strings.TrimSuffix(line, "\n"))
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, c)
			}
			if len(got) != tc.count {
				t.Fatalf("kcat printed %d records, want %d", len(got), tc.count)
			}
			if tc.count == len(want) {
				checkConsumed(t, got, st)
			} else {
				checkConsumed(t, got, prefixOf(st, got))
			}
			if want, have := nextOffsets(got), committed(t, adm, group, topic); !maps.Equal(have, want) {
				t.Errorf("committed %v, want last consumed + 1 = %v", have, want)
			}
		})
	}
}

// prefixOf is, of each partition of st, the records up to the highest offset
// in got: what a consumer stopped by a count should have read.
func prefixOf(st []stored, got []consumed) []stored {
	next := nextOffsets(got)
	var out []stored
	for _, s := range st {
		if s.Offset < next[s.Partition] {
			out = append(out, s)
		}
	}
	return out
}

// kcatMetadata is the part of kcat -L -J's output the test checks.
type kcatMetadata struct {
	Brokers []struct {
		ID   int32  `json:"id"`
		Name string `json:"name"`
	} `json:"brokers"`
	Topics []struct {
		Topic      string `json:"topic"`
		Partitions []struct {
			Partition int32 `json:"partition"`
			Leader    int32 `json:"leader"`
		} `json:"partitions"`
	} `json:"topics"`
}

// TestKcatMetadata: kcat -L lists the one broker at the address it was given
// and the topic with its 4 partitions, each led by that broker.
func TestKcatMetadata(t *testing.T) {
	t.Parallel()
	addr := startBroker(t, map[string]int32{topic: partitions, "payments": 1})
	var md kcatMetadata
	out := kcat(t, "-b", addr, "-L", "-J", "-t", topic)
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != addr {
		t.Fatalf("brokers %+v, want one at %s", md.Brokers, addr)
	}
	if len(md.Topics) != 1 || md.Topics[0].Topic != topic || len(md.Topics[0].Partitions) != partitions {
		t.Fatalf("topics %+v, want %s with %d partitions", md.Topics, topic, partitions)
	}
	for i, p := range md.Topics[0].Partitions {
		if p.Partition != int32(i) || p.Leader != md.Brokers[0].ID {
			t.Errorf("partition %+v, want %d led by broker %d", p, i, md.Brokers[0].ID)
		}
	}

	// Without -t: every topic.
	out = kcat(t, "-b", addr, "-L", "-J")
	md = kcatMetadata{}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J: %v\n%s", err, out)
	}
	names := make(map[string]int)
	for _, tp := range md.Topics {
		names[tp.Topic] = len(tp.Partitions)
	}
	if want := map[string]int{topic: partitions, "payments": 1}; !maps.Equal(names, want) {
		t.Errorf("topics %v, want %v", names, want)
	}
}

// TestKcatGroupConsumesEachRecordOnce: see testGroupOnce, with two kcat -G
// processes as the members.
func TestKcatGroupConsumesEachRecordOnce(t *testing.T) {
	t.Parallel()
	testGroupOnce(t, kcatClient())
}

// TestKcatRebalance: see testGroupRebalance; b leaves on SIGTERM.
func TestKcatRebalance(t *testing.T) {
	t.Parallel()
	testGroupRebalance(t, kcatClient())
}
