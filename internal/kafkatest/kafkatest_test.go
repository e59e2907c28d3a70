package kafkatest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/trails-kg/trails/internal/kafkatest"
)

// TestKillLeaderAndRestart: a record acknowledged by the in-sync replicas
// survives a SIGKILL of its partition's leader; the cluster takes writes
// with one node of three down; the node killed comes back on its data and
// catches up; a record of 16 MiB fits; and a consumer reads them all back
// in the order they were written.
func TestKillLeaderAndRestart(t *testing.T) {
	c := kafkatest.Start(t)
	t.Logf("3 nodes up in %v", c.Started.Round(time.Millisecond))
	const topic = "log"
	c.CreateTopic(t, topic, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// franz-go's producer is idempotent unless told otherwise; acks=all is
	// its default too, said here because the test is about it.
	producer, err := kgo.NewClient(
		kgo.SeedBrokers(c.Brokers()...),
		kgo.DefaultProduceTopic(topic),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchMaxBytes(kafkatest.MaxMessageBytes),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	produce := func(value []byte) int64 {
		t.Helper()
		r := &kgo.Record{Value: value}
		if err := producer.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatalf("produce %d bytes: %v", len(value), err)
		}
		return r.Offset
	}

	big := make([]byte, 16<<20)
	rand.Read(big)
	want := [][]byte{[]byte("first"), []byte("second"), big}

	if got := produce(want[0]); got != 0 {
		t.Fatalf("first record at offset %d, want 0", got)
	}
	leader := c.Leader(t, topic, 0)
	c.Kill(leader)
	t0 := time.Now()
	if got := produce(want[1]); got != 1 {
		t.Fatalf("second record at offset %d, want 1", got)
	}
	t.Logf("node %d (the leader) killed; the second record acknowledged %v later", leader, time.Since(t0).Round(time.Millisecond))

	t0 = time.Now()
	c.Restart(leader)
	t.Logf("node %d back in %v", leader, time.Since(t0).Round(time.Millisecond))
	waitInSync(ctx, t, c, topic, 3)

	if got := produce(want[2]); got != 2 {
		t.Fatalf("16 MiB record at offset %d, want 2", got)
	}

	consumer, err := kgo.NewClient(
		kgo.SeedBrokers(c.Brokers()...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
	)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	var got []*kgo.Record
	for len(got) < len(want) {
		fs := consumer.PollFetches(ctx)
		if errs := fs.Errors(); len(errs) > 0 {
			t.Fatalf("fetch after %d records: %v", len(got), errs[0].Err)
		}
		got = append(got, fs.Records()...)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i, r := range got {
		if r.Offset != int64(i) || !bytes.Equal(r.Value, want[i]) {
			t.Errorf("record %d: got offset %d and %d bytes (%.8q), want offset %d and %d bytes (%.8q)",
				i, r.Offset, len(r.Value), r.Value, i, len(want[i]), want[i])
		}
	}
}

// waitInSync waits until every partition of topic has n replicas in sync.
func waitInSync(ctx context.Context, t *testing.T, c *kafkatest.Cluster, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Brokers()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	t0 := time.Now()
	var isr []int32
	for time.Since(t0) < time.Minute {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			in := true
			for _, p := range md.Topics[topic].Partitions {
				isr = p.ISR
				in = in && len(p.ISR) == n
			}
			if in {
				t.Logf("%s: %d replicas in sync %v after the restart", topic, n, time.Since(t0).Round(time.Millisecond))
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: in-sync replicas %v a minute after the restart, want %d", topic, isr, n)
}
