package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"
)

// DefaultKafkaTopic is the topic of the Kafka event log when none is configured.
const DefaultKafkaTopic = "flipbook-events"

// KafkaOptions configure NewKafkaLog. Zero values mean the defaults.
type KafkaOptions struct {
	Brokers []string // host:port of one or more brokers (required)
	Topic   string   // default DefaultKafkaTopic
	// Partitions of the topic (default DefaultPartitions when it is created). An existing
	// topic must have exactly this many partitions; with 0 its count is used.
	Partitions int
	// ReplicationFactor of a created topic; default -1, the broker's default.
	ReplicationFactor int
	// BatchTimeout is how long the writer waits to fill a produce batch (default 5 ms;
	// kafka-go's own default of 1 s would make every Append take a second).
	BatchTimeout time.Duration
	// BatchSize is the most messages in one produce request per partition (default 1000).
	BatchSize int
	// Compression of produce batches (default none).
	Compression kafka.Compression
	// ReadWait is how long Read lets the broker wait for records when there are none. The
	// default 0 asks the broker to answer at once (MinBytes 0), as Log.Read requires.
	ReadWait time.Duration
	// FetchMaxBytes bounds one fetch response (default 4 MiB; the broker still returns at
	// least one whole record batch).
	FetchMaxBytes int
	// Timeout bounds each request to the brokers and waiting for a new topic (default 10 s).
	Timeout time.Duration
}

// KafkaLog is the event log on Kafka (github.com/segmentio/kafka-go).
//
// Append produces one message per event with acks=all and returns once the brokers
// acknowledged all of them. The message key is the workspace id (decimal); the partition is
// PartitionOf(workspace, Partitions()), chosen by our own balancer (not Kafka's key hash), so
// both log implementations partition alike. The value is the event's binary encoding
// (codec.go), the message time its ReceivedAt.
//
// Read fetches one partition from an explicit offset with no consumer group: the consumer
// stores its offsets itself, next to the data. Offsets are Kafka's, dense from 0 on a fresh
// topic (nothing here writes transactions or control records).
//
// Trim is a no-op: Kafka deletes old records by the topic's retention (retention.ms,
// retention.bytes). Set retention longer than the consumer can ever lag; Read of an offset
// that retention already deleted is an error, not a silent skip.
//
// kafka-go has no idempotent producer: when a produce request is retried after a failure
// whose outcome was unknown (a broker that failed after storing), the events can be stored
// twice, at two offsets. Exactly-once downstream holds per offset; a duplicate produced this
// way is a second event.
type KafkaLog struct {
	topic     string
	parts     int
	opts      KafkaOptions
	transport *kafka.Transport
	client    *kafka.Client
	writer    *kafka.Writer

	mu     sync.RWMutex
	closed bool
}

// NewKafkaLog connects to the brokers, creates the topic with o.Partitions partitions if it
// does not exist, waits until every partition has a leader, and returns the log.
func NewKafkaLog(ctx context.Context, o KafkaOptions) (*KafkaLog, error) {
	if len(o.Brokers) == 0 {
		return nil, errors.New("ingest: kafka: no brokers")
	}
	if o.Partitions < 0 || o.Partitions > MaxPartitions {
		return nil, fmt.Errorf("ingest: partitions must be 1..%d, got %d", MaxPartitions, o.Partitions)
	}
	if o.Topic == "" {
		o.Topic = DefaultKafkaTopic
	}
	if o.ReplicationFactor == 0 {
		o.ReplicationFactor = -1
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = 5 * time.Millisecond
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 1000
	}
	if o.FetchMaxBytes <= 0 {
		o.FetchMaxBytes = 4 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	addr := kafka.TCP(o.Brokers...)
	transport := &kafka.Transport{ClientID: "flipbook", DialTimeout: o.Timeout}
	l := &KafkaLog{
		topic: o.Topic, opts: o, transport: transport,
		client: &kafka.Client{Addr: addr, Transport: transport, Timeout: o.Timeout},
	}
	parts, err := l.ensureTopic(ctx)
	if err != nil {
		transport.CloseIdleConnections()
		return nil, err
	}
	l.parts = parts
	l.writer = &kafka.Writer{
		Addr:         addr,
		Topic:        o.Topic,
		Balancer:     kafka.BalancerFunc(l.balance),
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: o.BatchTimeout,
		BatchSize:    o.BatchSize,
		Compression:  o.Compression,
		WriteTimeout: o.Timeout,
		ReadTimeout:  o.Timeout,
		Transport:    transport,
	}
	return l, nil
}

// ensureTopic creates the topic when missing and returns its partition count once every
// partition has a leader.
func (l *KafkaLog) ensureTopic(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, l.opts.Timeout)
	defer cancel()
	created := false
	for backoff := 10 * time.Millisecond; ; backoff = min(2*backoff, 500*time.Millisecond) {
		meta, err := l.client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{l.topic}})
		if err == nil {
			n, ready, terr := l.topicState(meta)
			switch {
			case terr == nil && ready:
				return n, nil
			case errors.Is(terr, kafka.UnknownTopicOrPartition) && !created:
				if err := l.createTopic(ctx); err != nil {
					return 0, err
				}
				created = true
				continue
			case terr != nil && !errors.Is(terr, kafka.UnknownTopicOrPartition) && !errors.Is(terr, kafka.LeaderNotAvailable):
				return 0, terr
			}
		}
		t := time.NewTimer(backoff) // the topic is being created: its metadata follows shortly
		select {
		case <-ctx.Done():
			t.Stop()
			if err == nil {
				err = ctx.Err()
			}
			return 0, fmt.Errorf("ingest: kafka topic %q not ready: %w", l.topic, err)
		case <-t.C:
		}
	}
}

// topicState reads the topic's partitions from metadata: their count, whether all have a
// leader, and the topic's error.
func (l *KafkaLog) topicState(meta *kafka.MetadataResponse) (n int, ready bool, err error) {
	for _, t := range meta.Topics {
		if t.Name != l.topic {
			continue
		}
		if t.Error != nil {
			return 0, false, t.Error
		}
		n = len(t.Partitions)
		if n == 0 {
			return 0, false, nil
		}
		if l.opts.Partitions != 0 && n != l.opts.Partitions {
			return 0, false, fmt.Errorf("ingest: kafka topic %q has %d partitions, configured %d (the count cannot change)", l.topic, n, l.opts.Partitions)
		}
		if n > MaxPartitions {
			return 0, false, fmt.Errorf("ingest: kafka topic %q has %d partitions, at most %d are supported", l.topic, n, MaxPartitions)
		}
		for _, p := range t.Partitions {
			if p.Error != nil || p.Leader.Host == "" {
				return n, false, nil
			}
		}
		return n, true, nil
	}
	return 0, false, kafka.UnknownTopicOrPartition
}

func (l *KafkaLog) createTopic(ctx context.Context) error {
	n := l.opts.Partitions
	if n == 0 {
		n = DefaultPartitions
	}
	res, err := l.client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: l.topic, NumPartitions: n, ReplicationFactor: l.opts.ReplicationFactor,
	}}})
	if err != nil {
		return fmt.Errorf("ingest: create kafka topic %q: %w", l.topic, err)
	}
	if err := res.Errors[l.topic]; err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return fmt.Errorf("ingest: create kafka topic %q: %w", l.topic, err)
	}
	return nil
}

// balance maps a message to the partition of its workspace (the key).
func (l *KafkaLog) balance(msg kafka.Message, _ ...int) int {
	ws, err := strconv.ParseInt(string(msg.Key), 10, 64)
	if err != nil {
		return 0 // not reached: every key is written by Append
	}
	return PartitionOf(ws, l.parts)
}

// Partitions is the number of partitions of the topic.
func (l *KafkaLog) Partitions() int { return l.parts }

// Topic is the topic name.
func (l *KafkaLog) Topic() string { return l.topic }

// Append produces the events and returns once every one is acknowledged by all in-sync
// replicas (see Log). Unlike the embedded log, an error can leave some of the events stored
// (those of other partitions); when ctx ends first the outcome is unknown.
func (l *KafkaLog) Append(ctx context.Context, events []Event) error {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return ErrClosed
	}
	if len(events) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, len(events))
	lens := make([]int, 2*len(events))
	buf := make([]byte, 0, 128*len(events)) // keys and values of all messages, back to back
	for i := range events {
		start := len(buf)
		buf = strconv.AppendInt(buf, events[i].Workspace, 10)
		keyEnd := len(buf)
		buf = appendEvent(buf, &events[i])
		lens[2*i], lens[2*i+1] = keyEnd-start, len(buf)-keyEnd
	}
	pos := 0
	for i := range msgs {
		k, v := lens[2*i], lens[2*i+1]
		msgs[i] = kafka.Message{Key: buf[pos : pos+k : pos+k], Value: buf[pos+k : pos+k+v : pos+k+v], Time: events[i].ReceivedAt}
		pos += k + v
	}
	if err := l.writer.WriteMessages(ctx, msgs...); err != nil {
		return fmt.Errorf("ingest: kafka produce: %w", err)
	}
	return nil
}

// Read fetches up to limit records of partition p from offset `from` (see Log). It does not
// wait for new records (unless ReadWait is set). An offset past the end gives no records; an
// offset that retention already deleted is an error.
func (l *KafkaLog) Read(ctx context.Context, p int, from uint64, limit int) ([]Record, error) {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	if p < 0 || p >= l.parts {
		return nil, fmt.Errorf("ingest: partition %d out of range 0..%d", p, l.parts-1)
	}
	if limit <= 0 {
		return nil, nil
	}
	req := &kafka.FetchRequest{
		Topic: l.topic, Partition: p, Offset: int64(from),
		MaxBytes: int64(min(l.opts.FetchMaxBytes, max(64<<10, 256*limit))),
		MinBytes: 0, MaxWait: time.Millisecond,
	}
	if l.opts.ReadWait > 0 {
		req.MinBytes, req.MaxWait = 1, l.opts.ReadWait
	}
	res, err := l.client.Fetch(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("ingest: kafka fetch partition %d: %w", p, err)
	}
	if res.Error != nil {
		if errors.Is(res.Error, kafka.OffsetOutOfRange) {
			return nil, l.outOfRange(ctx, p, from)
		}
		return nil, fmt.Errorf("ingest: kafka fetch partition %d: %w", p, res.Error)
	}
	var out []Record
	for len(out) < limit {
		r, err := res.Records.ReadRecord()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: kafka fetch partition %d: %w", p, err)
		}
		if r.Key != nil {
			_ = r.Key.Close()
		}
		if r.Offset < int64(from) { // a fetch can start with the batch that holds `from`
			if r.Value != nil {
				_ = r.Value.Close()
			}
			continue
		}
		rec := Record{Partition: p, Offset: uint64(r.Offset)}
		v, err := protocol.ReadAll(r.Value)
		if r.Value != nil {
			_ = r.Value.Close()
		}
		if err == nil {
			err = decodeEvent(v, &rec.Event)
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: kafka partition %d offset %d: %w", p, r.Offset, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// outOfRange explains an OffsetOutOfRange answer: nil (no records) when from is past the
// end, an error when retention deleted it.
func (l *KafkaLog) outOfRange(ctx context.Context, p int, from uint64) error {
	res, err := l.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{
		l.topic: {kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p)},
	}})
	if err != nil {
		return fmt.Errorf("ingest: kafka list offsets of partition %d: %w", p, err)
	}
	for _, po := range res.Topics[l.topic] {
		if po.Partition != p {
			continue
		}
		if po.Error != nil {
			return fmt.Errorf("ingest: kafka list offsets of partition %d: %w", p, po.Error)
		}
		if int64(from) >= po.LastOffset {
			return nil
		}
		return fmt.Errorf("ingest: kafka partition %d: offset %d was deleted by retention (the log starts at %d)", p, from, po.FirstOffset)
	}
	return fmt.Errorf("ingest: kafka list offsets: no answer for partition %d", p)
}

// EndOffsets lists the end (high watermark) of every partition with one ListOffsets request
// (see EndOffsets).
func (l *KafkaLog) EndOffsets(ctx context.Context) ([]uint64, error) {
	l.mu.RLock()
	closed := l.closed
	l.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	reqs := make([]kafka.OffsetRequest, l.parts)
	for p := range reqs {
		reqs[p] = kafka.LastOffsetOf(p)
	}
	res, err := l.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{l.topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("ingest: kafka list offsets: %w", err)
	}
	out := make([]uint64, l.parts)
	seen := 0
	for _, po := range res.Topics[l.topic] {
		if po.Partition < 0 || po.Partition >= l.parts {
			continue
		}
		if po.Error != nil {
			return nil, fmt.Errorf("ingest: kafka list offsets of partition %d: %w", po.Partition, po.Error)
		}
		out[po.Partition] = uint64(max(po.LastOffset, 0))
		seen++
	}
	if seen != l.parts {
		return nil, fmt.Errorf("ingest: kafka list offsets: %d of %d partitions answered", seen, l.parts)
	}
	return out, nil
}

// Trim does nothing: Kafka's retention deletes old records (see KafkaLog).
func (l *KafkaLog) Trim(context.Context, int, uint64) error { return nil }

// Close flushes and stops the writer and closes the connections. Later calls return
// ErrClosed.
func (l *KafkaLog) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock() // Appends in progress held the read lock: none is left
	err := l.writer.Close()
	l.transport.CloseIdleConnections()
	return err
}
