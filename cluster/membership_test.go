package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"flipbook/internal/testutil"
)

// newBrokers is an in-process Kafka-protocol cluster of three brokers (kfake) on loopback.
func newBrokers(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// node is a member under test, with what its callbacks were told.
type node struct {
	*Member
	mu     sync.Mutex
	gained []int
	lost   []int
}

func join(t *testing.T, brokers []string, name string, parts int) *node {
	return joinVia(t, brokers, name, parts, nil)
}

func joinVia(t *testing.T, brokers []string, name string, parts int, dial func(context.Context, string, string) (net.Conn, error)) *node {
	t.Helper()
	n := &node{}
	m, err := Join(context.Background(), Options{dial: dial, Brokers: brokers, Node: name, URL: "http://" + name + ".test:8080",
		Partitions: parts, SessionTimeout: 6 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		OnAssigned: func(p []int) { n.mu.Lock(); n.gained = append(n.gained, p...); n.mu.Unlock() },
		OnRevoked:  func(p []int) { n.mu.Lock(); n.lost = append(n.lost, p...); n.mu.Unlock() }})
	require.NoError(t, err)
	n.Member = m
	return n
}

func (n *node) lostSoFar() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.lost)
}

// settled waits until the live nodes own every partition exactly once between them, each
// some, and every node's view of the owners says the same; it returns partition → owner.
func settled(t *testing.T, parts int, nodes ...*node) map[int]string {
	t.Helper()
	var owner map[int]string
	testutil.Eventually(t, 60*time.Second, 100*time.Millisecond, func() error {
		owner = map[int]string{}
		ok := true
		for _, n := range nodes {
			if len(n.Owned()) == 0 {
				ok = false // every live node gets a share (parts >= nodes here)
			}
			for _, p := range n.Owned() {
				if _, dup := owner[p]; dup {
					ok = false
				}
				owner[p] = n.o.Node
			}
		}
		if !ok || len(owner) != parts {
			return fmt.Errorf("the cluster did not settle: %d of %d partitions owned, each once and every node some: %v", len(owner), parts, ok)
		}
		for _, n := range nodes {
			view := n.Owners()
			for p, name := range owner {
				if view[p].Node != name || view[p].URL != "http://"+name+".test:8080" {
					return fmt.Errorf("the cluster did not settle: views differ: %s sees partition %d at %+v, its owner is %s", n.o.Node, p, view[p], name)
				}
			}
		}
		return nil
	})
	return owner
}

func counts(owner map[int]string) map[string]int {
	c := map[string]int{}
	for _, n := range owner {
		c[n]++
	}
	return c
}

// Three nodes share the partitions, each owned once and known by all; a node leaving gives its
// partitions to the others and no other partition moves; a fourth joining takes some, and only
// those move.
func TestMembershipAssignsEveryPartitionOnce(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	const parts = 12
	a := join(t, brokers, "a", parts)
	b := join(t, brokers, "b", parts)
	c := join(t, brokers, "c", parts)
	defer a.Close()
	defer b.Close()
	owner := settled(t, parts, a, b, c)
	for n, k := range counts(owner) {
		require.Equal(t, parts/3, k, "%s owns its share: %v", n, counts(owner))
	}
	require.Equal(t, parts, a.Partitions())
	require.Equal(t, a.PartitionOf(7), int(7%parts), "a workspace's partition is the event topic's")

	// c leaves: its partitions go to a and b, theirs stay where they are.
	cHad := c.Owned()
	aLostBefore, bLostBefore := len(a.lostSoFar()), len(b.lostSoFar())
	c.Close()
	after := settled(t, parts, a, b)
	for p, n := range owner {
		if n != "c" {
			require.Equal(t, n, after[p], "partition %d did not move", p)
		}
	}
	for _, p := range cHad {
		require.Contains(t, []string{"a", "b"}, after[p])
	}
	require.Len(t, a.lostSoFar(), aLostBefore, "nothing revoked from a")
	require.Len(t, b.lostSoFar(), bLostBefore, "nothing revoked from b")

	// d joins: it takes a share; what it does not take stays with its owner.
	d := join(t, brokers, "d", parts)
	defer d.Close()
	withD := settled(t, parts, a, b, d)
	require.Equal(t, parts/3, counts(withD)["d"], "%v", counts(withD))
	moved := 0
	for p, n := range after {
		if withD[p] != n {
			require.Equal(t, "d", withD[p], "partition %d moved, but not to the new node", p)
			moved++
		}
	}
	require.Equal(t, parts/3, moved, "only d's share moved")
	require.ElementsMatch(t, d.Owned(), slices.Collect(maps.Keys(filter(withD, "d"))))
}

func filter(owner map[int]string, name string) map[int]bool {
	out := map[int]bool{}
	for p, n := range owner {
		if n == name {
			out[p] = true
		}
	}
	return out
}

// An existing changelog topic's partition count wins over the option (the count is fixed when
// the cluster's topics are first created).
func TestMembershipKeepsExistingPartitionCount(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	a := join(t, brokers, "a", 6)
	defer a.Close()
	settled(t, 6, a)
	b := join(t, brokers, "b", 30)
	defer b.Close()
	require.Equal(t, 6, b.Partitions())
	settled(t, 6, a, b)
}

// cutter dials the brokers until cut, then closes every connection it made and refuses new
// ones: the node is off the network, as a node stopped (SIGSTOP) or partitioned away.
type cutter struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (c *cutter) dial(ctx context.Context, network, host string) (net.Conn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cut {
		return nil, fmt.Errorf("cut off")
	}
	conn, err := (&net.Dialer{}).DialContext(ctx, network, host)
	if err == nil {
		c.conns = append(c.conns, conn)
	}
	return conn, err
}

func (c *cutter) resume() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = false
	c.conns = nil
}

func (c *cutter) cutOff() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	for _, conn := range c.conns {
		conn.Close()
	}
}

// A node cut off the brokers past the session timeout loses its partitions to the others, and
// stops claiming them itself (Owns false) by the time the others own them.
func TestMembershipNodeCutOff(t *testing.T) {
	t.Parallel()
	brokers := newBrokers(t)
	const parts = 6
	a := join(t, brokers, "a", parts)
	defer a.Close()
	cut := &cutter{}
	b := joinVia(t, brokers, "b", parts, cut.dial)
	owner := settled(t, parts, a, b)
	bHad := b.Owned()
	require.NotEmpty(t, bHad)
	lostBefore := len(b.lostSoFar()) // what b gave up while the group formed
	cut.cutOff()
	start := time.Now()
	after := settled(t, parts, a)
	took := time.Since(start)
	for p := range owner {
		require.Equal(t, "a", after[p])
	}
	t.Logf("a owned b's partitions %s after b was cut off (session timeout 6 s)", took.Round(100*time.Millisecond))
	// b no longer claims them: its client gave them up (lost) once its session could not be kept.
	require.Eventually(t, func() bool { return len(b.Owned()) == 0 }, 20*time.Second, 100*time.Millisecond,
		"the cut-off node still claims %v", b.Owned())
	t.Logf("b gave its partitions up %s after it was cut off", time.Since(start).Round(100*time.Millisecond))
	require.ElementsMatch(t, bHad, b.lostSoFar()[lostBefore:], "b gave up what it had, once")
	b.Close()
}
