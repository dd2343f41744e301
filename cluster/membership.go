// Package cluster is cluster mode's membership (issue 26, DESIGN.md §12): which node owns which
// partition of the workspaces, decided by Kafka's consumer-group protocol, and what every node
// knows of every partition's owner. It is the first part of cluster mode and is not wired into
// `flipbook serve` yet (docs/DECISIONS.md "Cluster mode: membership and fencing").
//
// A workspace belongs to one partition, ingest.PartitionOf(workspace, N), the same for every
// topic. The nodes form one consumer group over the changelog topic (N partitions, compacted:
// the workspaces' state changes, once writes go through it): the partitions the group assigns a
// node are the partitions it owns. The balancer is cooperative-sticky, so a member joining or
// leaving moves as few partitions as possible and partitions that do not move are never revoked
// from their owner.
//
// Every node knows every partition's owner from the owners topic (compacted, one partition):
// an owner writes {node, url, generation} under the partition's key once the group assigned it
// the partition, and every node reads the topic from its start. A record of an older group
// generation than one already read for the partition is ignored. Between a revocation and the
// new owner's record a partition reads as owned by the node that lost it (which no longer
// claims it: Owns is false there): callers wait or answer 503 then.
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"flipbook/ingest"
)

// Defaults of Options.
const (
	DefaultPartitions     = 24
	DefaultGroup          = "flipbook-cluster"
	DefaultChangelogTopic = "flipbook-changelog"
	DefaultOwnersTopic    = "flipbook-owners"
	DefaultGlobalTopic    = "flipbook-global"
	DefaultSessionTimeout = 10 * time.Second
)

// Options configure Join.
type Options struct {
	Brokers []string
	// Node is this node's name (--cluster-node), unique in the cluster; URL is how the others
	// reach it (--advertise-url).
	Node, URL string
	// Partitions is the number of partitions, used when the topics are first created (an
	// existing changelog topic's count wins).
	Partitions int
	// Group, ChangelogTopic, OwnersTopic and GlobalTopic name the consumer group and the
	// topics (GlobalTopic: the state every node holds, state.go).
	Group, ChangelogTopic, OwnersTopic, GlobalTopic string
	// ReplicationFactor of the topics created (0: the brokers' default).
	ReplicationFactor int16
	// SessionTimeout is how long a silent node keeps its partitions (heartbeats every third).
	SessionTimeout time.Duration
	// Standby makes the node follow the changelog of the partitions it does not own, so a
	// takeover only catches up (StartNode; standby.go).
	Standby bool
	// OnAssigned and OnRevoked are told the partitions this node gains and loses, in the
	// group's callbacks: OnRevoked returns before the partitions can be assigned elsewhere.
	OnAssigned, OnRevoked func(partitions []int)
	Logger                *slog.Logger

	// dial replaces the clients' dialer (tests cut a node off the brokers with it).
	dial func(ctx context.Context, network, host string) (net.Conn, error)
}

// Owner is the node owning a partition, as the owners topic says.
type Owner struct {
	Node       string `json:"node"`
	URL        string `json:"url"`
	Generation int32  `json:"generation"`
}

// Member is this node in the cluster.
type Member struct {
	o     Options
	log   *slog.Logger
	parts int
	group *kgo.Client // the consumer group over the changelog topic
	read  *kgo.Client // reads the owners topic

	mu     sync.Mutex
	owned  map[int]bool
	owners map[int]Owner
	seen   chan struct{} // closed and replaced on every change of owners (Wait)

	gmu    sync.Mutex
	gnext  int64         // the global topic's offset applied so far (FollowGlobal)
	gend   int64         // its last stable offset as the follower's fetches last said
	gmoved chan struct{} // closed and replaced when gnext moves

	cancel context.CancelFunc
	done   sync.WaitGroup
}

// Join creates the topics if needed, joins the group and starts reading the owners topic.
func Join(ctx context.Context, o Options) (*Member, error) {
	if o.Node == "" || o.URL == "" || len(o.Brokers) == 0 {
		return nil, errors.New("cluster: a node name, its URL and the brokers are required")
	}
	if o.Partitions <= 0 {
		o.Partitions = DefaultPartitions
	}
	o.Group = cmpOr(o.Group, DefaultGroup)
	o.ChangelogTopic = cmpOr(o.ChangelogTopic, DefaultChangelogTopic)
	o.OwnersTopic = cmpOr(o.OwnersTopic, DefaultOwnersTopic)
	o.GlobalTopic = cmpOr(o.GlobalTopic, DefaultGlobalTopic)
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = DefaultSessionTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	m := &Member{o: o, log: o.Logger.With("component", "cluster", "node", o.Node),
		owned: map[int]bool{}, owners: map[int]Owner{}, seen: make(chan struct{}), gmoved: make(chan struct{})}
	common := []kgo.Opt{kgo.SeedBrokers(o.Brokers...)}
	if o.dial != nil {
		common = append(common, kgo.Dialer(o.dial))
	}
	admin, err := kgo.NewClient(common...)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	defer admin.Close()
	if m.parts, err = ensureTopic(ctx, admin, o.ChangelogTopic, int32(o.Partitions), o.ReplicationFactor); err != nil {
		return nil, err
	}
	for _, t := range []string{o.OwnersTopic, o.GlobalTopic} {
		if _, err = ensureTopic(ctx, admin, t, 1, o.ReplicationFactor); err != nil {
			return nil, err
		}
	}
	if m.read, err = kgo.NewClient(append(common, kgo.ConsumeTopics(o.OwnersTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(500*time.Millisecond))...); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if m.group, err = kgo.NewClient(append(common, kgo.ClientID("flipbook-"+o.Node),
		kgo.ConsumerGroup(o.Group), kgo.ConsumeTopics(o.ChangelogTopic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(o.SessionTimeout), kgo.HeartbeatInterval(o.SessionTimeout/3),
		kgo.RebalanceTimeout(o.SessionTimeout*2), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(m.assigned), kgo.OnPartitionsRevoked(m.revoked), kgo.OnPartitionsLost(m.revoked),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.RequiredAcks(kgo.AllISRAcks()))...); err != nil {
		m.read.Close()
		return nil, fmt.Errorf("cluster: %w", err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	m.done.Add(2)
	go m.readOwners(rctx)
	go m.poll(rctx)
	return m, nil
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Partitions is the cluster's number of partitions.
func (m *Member) Partitions() int { return m.parts }

// PartitionOf is the partition of a workspace.
func (m *Member) PartitionOf(workspace int64) int { return ingest.PartitionOf(workspace, m.parts) }

// Owns says whether this node owns partition p now.
func (m *Member) Owns(p int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.owned[p]
}

// Owned is the partitions this node owns, in order.
func (m *Member) Owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, 0, len(m.owned))
	for p := range m.owned {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// Owner is partition p's owner as the owners topic says (false before any owner wrote it).
func (m *Member) Owner(p int) (Owner, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.owners[p]
	return o, ok
}

// Owners is every partition's owner known so far.
func (m *Member) Owners() map[int]Owner {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int]Owner, len(m.owners))
	for p, o := range m.owners {
		out[p] = o
	}
	return out
}

// Changed returns a channel closed at the next change of the owners or of this node's
// partitions (for waiting on a rebalance).
func (m *Member) Changed() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seen
}

// changedLocked wakes Changed's waiters; m.mu is held.
func (m *Member) changedLocked() {
	close(m.seen)
	m.seen = make(chan struct{})
}

// assigned is the group's callback for partitions gained: they are this node's, and the
// owners topic says so.
func (m *Member) assigned(ctx context.Context, cl *kgo.Client, got map[string][]int32) {
	parts := toInts(got[m.o.ChangelogTopic])
	if len(parts) == 0 {
		return
	}
	_, gen := cl.GroupMetadata()
	m.mu.Lock()
	for _, p := range parts {
		m.owned[p] = true
	}
	m.changedLocked()
	m.mu.Unlock()
	if m.o.OnAssigned != nil {
		m.o.OnAssigned(parts)
	}
	recs := make([]*kgo.Record, 0, len(parts))
	for _, p := range parts {
		v, _ := json.Marshal(Owner{Node: m.o.Node, URL: m.o.URL, Generation: gen})
		recs = append(recs, &kgo.Record{Topic: m.o.OwnersTopic, Key: []byte(strconv.Itoa(p)), Value: v})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		m.log.Error("publish partition owners", "partitions", parts, "err", err)
	}
	m.log.Info("partitions assigned", "partitions", parts, "generation", gen)
}

// revoked is the group's callback for partitions lost or given up: this node stops claiming
// them before the group can assign them elsewhere.
func (m *Member) revoked(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
	parts := toInts(lost[m.o.ChangelogTopic])
	if len(parts) == 0 {
		return
	}
	m.mu.Lock()
	for _, p := range parts {
		delete(m.owned, p)
	}
	m.changedLocked()
	m.mu.Unlock()
	if m.o.OnRevoked != nil {
		m.o.OnRevoked(parts)
	}
	m.log.Info("partitions revoked", "partitions", parts)
}

func toInts(ps []int32) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	slices.Sort(out)
	return out
}

// poll keeps the group member fetching (the changelog's records are not used yet).
func (m *Member) poll(ctx context.Context) {
	defer m.done.Done()
	for ctx.Err() == nil {
		fs := m.group.PollFetches(ctx)
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			if ctx.Err() == nil && !errors.Is(err, context.Canceled) {
				m.log.Warn("changelog fetch", "topic", t, "partition", p, "err", err)
			}
		})
	}
}

// readOwners follows the owners topic from its start.
func (m *Member) readOwners(ctx context.Context) {
	defer m.done.Done()
	for ctx.Err() == nil {
		fs := m.read.PollFetches(ctx)
		if fs.IsClientClosed() {
			return
		}
		changed := false
		m.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			p, err := strconv.Atoi(string(r.Key))
			if err != nil {
				return
			}
			var o Owner
			if json.Unmarshal(r.Value, &o) != nil {
				return
			}
			if cur, ok := m.owners[p]; ok && cur.Generation > o.Generation {
				return // a record of an older generation, read late
			}
			m.owners[p] = o
			changed = true
		})
		if changed {
			m.changedLocked()
		}
		m.mu.Unlock()
	}
}

// Close leaves the group (its partitions are reassigned at once) and stops reading.
func (m *Member) Close() {
	m.group.Close() // leaves the group: OnRevoked runs for what it held
	m.cancel()
	m.read.Close()
	m.done.Wait()
}

// ensureTopic creates topic with n partitions (compacted) unless it exists, and returns its
// partition count.
func ensureTopic(ctx context.Context, cl *kgo.Client, topic string, n int32, rf int16) (int, error) {
	if rf == 0 {
		rf = -1 // the brokers' default
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = topic, n, rf
	c := kmsg.NewCreateTopicsRequestTopicConfig()
	c.Name, c.Value = "cleanup.policy", kmsg.StringPtr("compact")
	t.Configs = append(t.Configs, c)
	req.Topics = append(req.Topics, t)
	req.TimeoutMillis = 30_000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, fmt.Errorf("cluster: create topic %s: %w", topic, err)
	}
	if len(resp.Topics) == 1 {
		if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			return 0, fmt.Errorf("cluster: create topic %s: %w", topic, err)
		}
	}
	meta := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	meta.Topics = append(meta.Topics, mt)
	for {
		mresp, err := meta.RequestWith(ctx, cl)
		if err != nil {
			return 0, fmt.Errorf("cluster: topic %s: %w", topic, err)
		}
		if len(mresp.Topics) == 1 && mresp.Topics[0].ErrorCode == 0 && len(mresp.Topics[0].Partitions) > 0 {
			return len(mresp.Topics[0].Partitions), nil
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("cluster: topic %s: %w", topic, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}
