package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"flipbook/errs"
)

// Fencing (issue 26, "Writes"): a partition's state changes go to the changelog in Kafka
// transactions under one transactional id per partition, "<group>-p<partition>". Opening a
// partition's writer initializes that id's producer, which bumps its epoch: from then on the
// previous owner's producer is fenced, and its next commit fails with ErrFenced, whatever it
// believes it owns. A write is acknowledged only once its transaction committed, so a node that
// lost a partition can no longer acknowledge a write for it.

// ErrFenced is a changelog write refused because another node opened the partition's writer
// since: this node no longer owns the partition.
var ErrFenced = fmt.Errorf("cluster: fenced: another node owns the partition now (%w)", errs.ErrMoved)

// Change is one state change: a key of the partition's state and its new value (nil: deleted).
type Change struct {
	Key, Value []byte
}

// Writer writes one partition's changes to the changelog, fenced by its transactional id.
type Writer struct {
	m      *Member
	p      int
	cl     *kgo.Client
	fenced error // set once fenced: the producer is done for good

	// mu serializes the partition's transactions (StateSink); group is the writes waiting
	// for the next one (group commit, state.go).
	mu    sync.Mutex
	group commitGroup
}

// OpenWriter opens partition p's changelog writer and fences every writer of p opened before,
// on any node. The caller opens it when the partition is assigned (OnAssigned) and closes it
// when it is revoked.
func (m *Member) OpenWriter(ctx context.Context, p int) (*Writer, error) {
	if p < 0 || p >= m.parts {
		return nil, fmt.Errorf("cluster: no partition %d (of %d)", p, m.parts)
	}
	return m.openWriter(ctx, m.o.Group+"-p"+strconv.Itoa(p), p)
}

// openWriter opens a writer with transactional id id, of changelog partition p (-1: of the
// global topic only).
func (m *Member) openWriter(ctx context.Context, id string, p int) (*Writer, error) {
	opts := []kgo.Opt{kgo.SeedBrokers(m.o.Brokers...),
		kgo.TransactionalID(id),
		kgo.TransactionTimeout(m.o.SessionTimeout * 2),
		kgo.DefaultProduceTopic(m.o.ChangelogTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks())}
	if m.o.dial != nil {
		opts = append(opts, kgo.Dialer(m.o.dial))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	// An empty transaction initializes the producer id now (kgo does it lazily), which is
	// what fences the previous owner, and aborts whatever it left open.
	if err := cl.BeginTransaction(); err != nil {
		cl.Close()
		return nil, fmt.Errorf("cluster: open writer of partition %d: %w", p, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TryAbort); err != nil {
		cl.Close()
		return nil, fenced(fmt.Errorf("cluster: open writer of partition %d: %w", p, err))
	}
	return &Writer{m: m, p: p, cl: cl}, nil
}

// Append writes changes to the partition's changelog in one transaction and returns once it
// committed (then the changes are durable and the write may be acknowledged), or ErrFenced.
// Writes to one writer are serialized by its caller (the partition's owner).
func (w *Writer) Append(ctx context.Context, changes ...Change) error {
	if w.fenced != nil {
		return w.fenced
	}
	err := w.append(ctx, changes)
	if errors.Is(err, ErrFenced) {
		w.fenced = err
	}
	return err
}

// AppendWith is Append with changes to the global table in the same transaction (a write
// that touches both: a new book and its random id's lookup).
// It returns the offset after the partition's last record written (-1: none).
func (w *Writer) AppendWith(ctx context.Context, changes, global []Change) (int64, error) {
	if w.fenced != nil {
		return -1, w.fenced
	}
	end, err := w.appendWith(ctx, changes, global)
	if errors.Is(err, ErrFenced) {
		w.fenced = err
	}
	return end, err
}

func (w *Writer) append(ctx context.Context, changes []Change) error {
	_, err := w.appendWith(ctx, changes, nil)
	return err
}

// appendWith writes changes to the partition and global changes to the global topic in one
// transaction; it returns the offset after the partition's last record (-1: none written).
func (w *Writer) appendWith(ctx context.Context, changes, global []Change) (int64, error) {
	if err := w.cl.BeginTransaction(); err != nil {
		return -1, fenced(err)
	}
	recs := make([]*kgo.Record, 0, len(changes)+len(global))
	for _, c := range changes {
		recs = append(recs, &kgo.Record{Partition: int32(w.p), Key: c.Key, Value: c.Value})
	}
	for _, c := range global {
		recs = append(recs, &kgo.Record{Topic: w.m.o.GlobalTopic, Partition: 0, Key: c.Key, Value: c.Value})
	}
	res := w.cl.ProduceSync(ctx, recs...)
	perr := res.FirstErr()
	commit := kgo.TransactionEndTry(perr == nil)
	if err := w.cl.EndTransaction(ctx, commit); err != nil {
		err = fenced(fmt.Errorf("cluster: changelog of partition %d: %w", w.p, err))
		if !errors.Is(err, ErrFenced) {
			// Not committed; the transaction is aborted so the next Append can begin one.
			_ = w.cl.AbortBufferedRecords(ctx)
			_ = w.cl.EndTransaction(ctx, kgo.TryAbort)
		}
		return -1, err
	}
	if perr != nil {
		return -1, fenced(fmt.Errorf("cluster: changelog of partition %d: %w", w.p, perr))
	}
	end := int64(-1)
	for _, r := range res {
		if r.Record.Topic == w.m.o.ChangelogTopic && r.Record.Offset+1 > end {
			end = r.Record.Offset + 1
		}
	}
	return end, nil
}

// appendGroup writes several writes' changes in one transaction, in order (each write's
// partition changes, and its global changes to the global topic), and returns for each write the
// offset after its last partition record: a store that applied the writes up to i holds the
// changelog up to ends[i].
func (w *Writer) appendGroup(ctx context.Context, parts, globals [][]Change) ([]int64, error) {
	if w.fenced != nil {
		return nil, w.fenced
	}
	if err := w.cl.BeginTransaction(); err != nil {
		err = fenced(err)
		if errors.Is(err, ErrFenced) {
			w.fenced = err
		}
		return nil, err
	}
	var recs []*kgo.Record
	last := make([]*kgo.Record, len(parts)) // each write's last partition record
	for i := range parts {
		for _, c := range parts[i] {
			r := &kgo.Record{Partition: int32(w.p), Key: c.Key, Value: c.Value}
			recs = append(recs, r)
			last[i] = r
		}
		for _, c := range globals[i] {
			recs = append(recs, &kgo.Record{Topic: w.m.o.GlobalTopic, Partition: 0, Key: c.Key, Value: c.Value})
		}
	}
	res := w.cl.ProduceSync(ctx, recs...)
	perr := res.FirstErr()
	if err := w.cl.EndTransaction(ctx, kgo.TransactionEndTry(perr == nil)); err != nil {
		err = fenced(fmt.Errorf("cluster: changelog of partition %d: %w", w.p, err))
		if errors.Is(err, ErrFenced) {
			w.fenced = err
		} else {
			_ = w.cl.AbortBufferedRecords(ctx)
			_ = w.cl.EndTransaction(ctx, kgo.TryAbort)
		}
		return nil, err
	}
	if perr != nil {
		err := fenced(fmt.Errorf("cluster: changelog of partition %d: %w", w.p, perr))
		if errors.Is(err, ErrFenced) {
			w.fenced = err
		}
		return nil, err
	}
	ends := make([]int64, len(parts))
	for i, r := range last {
		ends[i] = -1
		if r != nil {
			ends[i] = r.Offset + 1
		}
	}
	return ends, nil
}

// Partition is the writer's partition.
func (w *Writer) Partition() int { return w.p }

// Close closes the writer (an open transaction is aborted by the broker at its timeout).
func (w *Writer) Close() { w.cl.Close() }

// fenced maps the broker's fencing errors to ErrFenced (keeping the cause).
func fenced(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch) ||
		errors.Is(err, kerr.InvalidProducerIDMapping) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
		return fmt.Errorf("%w (%v)", ErrFenced, err)
	}
	return err
}
