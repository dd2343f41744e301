package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// seededTopic exists in every test cluster before any log starts, with testPartitions
// partitions.
const seededTopic = "seeded-events"

// newKafkaCluster starts an in-process Kafka-protocol broker (kfake) on loopback and returns
// its address.
func newKafkaCluster(t testing.TB) []string {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(testPartitions, seededTopic))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

var topicSeq atomic.Int64

// nextTopic is a topic name no test used yet (a KafkaLog creates it).
func nextTopic() string { return fmt.Sprintf("events-%d", topicSeq.Add(1)) }

// kafkaEnv is a KafkaLog on a topic of a kfake cluster.
type kafkaEnv struct {
	brokers []string
	topic   string
	log     *KafkaLog
}

func newKafkaEnv(t testing.TB, brokers []string, topic string) *kafkaEnv {
	e := &kafkaEnv{brokers: brokers, topic: topic}
	e.open(t)
	t.Cleanup(func() { require.NoError(t, e.log.Close()) })
	return e
}

func (e *kafkaEnv) open(t testing.TB) {
	l, err := NewKafkaLog(context.Background(), KafkaOptions{Brokers: e.brokers, Topic: e.topic, Partitions: testPartitions})
	require.NoError(t, err)
	e.log = l
}

func (e *kafkaEnv) Log() Log    { return e.log }
func (e *kafkaEnv) Trims() bool { return false }
func (e *kafkaEnv) Reopen(t *testing.T) {
	require.NoError(t, e.log.Close())
	e.open(t)
}

// An existing topic is used as it is; its partition count must match the configured one.
func TestKafkaLogExistingTopic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	brokers := newKafkaCluster(t)
	_, err := NewKafkaLog(ctx, KafkaOptions{Brokers: brokers, Topic: seededTopic, Partitions: 4})
	require.ErrorContains(t, err, "cannot change")

	l, err := NewKafkaLog(ctx, KafkaOptions{Brokers: brokers, Topic: seededTopic}) // 0: the topic's count
	require.NoError(t, err)
	defer l.Close()
	require.Equal(t, testPartitions, l.Partitions())
	require.Equal(t, seededTopic, l.Topic())
	require.NoError(t, l.Append(ctx, []Event{testEvent(9, "seeded", 1)}))
	recs, err := l.Read(ctx, PartitionOf(9, testPartitions), 0, 10)
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Equal(t, testEvent(9, "seeded", 1), recs[0].Event)

	_, err = NewKafkaLog(ctx, KafkaOptions{Topic: "x"})
	require.Error(t, err, "no brokers")
}

// Reading records that retention deleted is an error (the consumer lost events), unlike
// reading past the end.
func TestKafkaLogReadDeletedRecords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	brokers := newKafkaCluster(t)
	env := newKafkaEnv(t, brokers, nextTopic())
	const ws = 6
	p := PartitionOf(ws, testPartitions)
	events := make([]Event, 10)
	for i := range events {
		events[i] = testEvent(ws, "ret", i)
	}
	require.NoError(t, env.log.Append(ctx, events))

	// What retention does, done now: delete the records below offset 5.
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	require.NoError(t, err)
	defer cl.Close()
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 5000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = env.topic
	rp := kmsg.NewDeleteRecordsRequestTopicPartition()
	rp.Partition, rp.Offset = int32(p), 5
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.NoError(t, kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))

	_, err = env.log.Read(ctx, p, 2, 10)
	require.ErrorContains(t, err, "deleted by retention")
	recs := readAll(t, env.log, p, 5, 100)
	requireDense(t, recs, p, 5)
	require.Len(t, recs, 5)
	recs, err = env.log.Read(ctx, p, 50, 10)
	require.NoError(t, err)
	require.Empty(t, recs)
}

// Read answers at once when there is nothing to read (it does not wait for records).
func TestKafkaLogReadDoesNotWait(t *testing.T) {
	ctx := context.Background()
	env := newKafkaEnv(t, newKafkaCluster(t), nextTopic())
	start := time.Now()
	for p := 0; p < testPartitions; p++ {
		recs, err := env.log.Read(ctx, p, 0, 100)
		require.NoError(t, err)
		require.Empty(t, recs)
	}
	require.Less(t, time.Since(start), 2*time.Second, "8 empty reads")
}

// BenchmarkKafkaAppend: many concurrent Appends of 20 events (64 goroutines) produced with
// acks=all to an in-process kfake broker on loopback.
func BenchmarkKafkaAppend(b *testing.B) {
	env := newKafkaEnv(b, newKafkaCluster(b), nextTopic())
	l := env.log
	b.SetParallelism(32)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		rng := rand.New(rand.NewPCG(rand.Uint64(), 3))
		events := make([]Event, 20)
		for pb.Next() {
			ws := int64(rng.IntN(1000))
			for i := range events {
				events[i] = sampleEvent(ws, i)
			}
			if err := l.Append(context.Background(), events); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N*20)/b.Elapsed().Seconds(), "events/s")
}
