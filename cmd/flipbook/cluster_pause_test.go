package main

// Cluster mode (issue 26): a node paused (SIGSTOP) past the session timeout loses its
// partitions and, resumed, cannot acknowledge a write for them; a fourth node joins and takes
// partitions without downtime for the workspaces that do not move.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"flipbook/internal/testutil"
)

// clusterWorkspace is a workspace of a test and its key.
type clusterWorkspace struct {
	id  int64
	key string
}

func newClusterWorkspace(t *testing.T, via *clusterNode, name string) clusterWorkspace {
	t.Helper()
	r := call(t, "POST", via.base+"/admin/v1/workspaces", clusterAdminToken, map[string]any{"name": name, "plan": "company"})
	require.Equal(t, 201, r.status, "%s", r.raw)
	id := int64(r.data()["id"].(float64))
	r = call(t, "POST", via.base+fmt.Sprintf("/admin/v1/workspaces/%d/keys", id), clusterAdminToken,
		map[string]any{"scopes": []string{"*"}, "mode": "live"})
	require.Equal(t, 201, r.status, "%s", r.raw)
	return clusterWorkspace{id: id, key: r.data()["key"].(string)}
}

// bookNames lists the names of a workspace's books, through node n.
func bookNames(t *testing.T, n *clusterNode, key string) map[string]int {
	t.Helper()
	names := map[string]int{}
	cursor := ""
	for {
		u := n.base + "/api/v1/books?limit=100"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		l := call(t, "GET", u, key, nil)
		require.Equal(t, 200, l.status, "%s", l.raw)
		for _, v := range l.json["data"].([]any) {
			names[v.(map[string]any)["name"].(string)]++
		}
		next := ""
		if m, ok := l.json["meta"].(map[string]any); ok {
			next, _ = m["next_cursor"].(string)
		}
		if next == "" {
			return names
		}
		cursor = next
	}
}

func TestClusterPausedNodeAndJoin(t *testing.T) {
	const parts = 6
	tc := newTestCluster(t, parts)
	a := tc.start(t, "node-a")
	b := tc.start(t, "node-b")
	c := tc.start(t, "node-c")
	settled(t, parts, a, b, c)
	ws := newClusterWorkspace(t, a, "Paused owner")
	require.Equal(t, "node-a", ownerOf(t, b, ws.id))

	// a stops answering anything (SIGSTOP) for longer than the session timeout (6 s): the
	// group gives its partitions to b and c, which restore them.
	require.NoError(t, a.child.cmd.Process.Signal(syscall.SIGSTOP))
	stopped := true
	// A write reaching the paused owner through another node is answered within the quick
	// forward timeout (30 s): 503 (its outcome unknown to the forwarder), never held for minutes.
	type answer struct {
		status int
		took   time.Duration
	}
	pausedWrite := make(chan answer, 1)
	go func() {
		start := time.Now()
		r := callWithTimeout(90*time.Second, "POST", b.base+"/api/v1/books/konva", ws.key, konvaBody(t, "while-paused", 1, 20, 30))
		pausedWrite <- answer{r, time.Since(start)}
	}()
	defer func() {
		if stopped {
			_ = a.child.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		if o := ownerOf(t, b, ws.id); o == "node-a" {
			return fmt.Errorf("a's partitions have not moved: b sees workspace %d owned by %s", ws.id, o)
		}
		return nil
	})
	r := call(t, "POST", b.base+"/api/v1/books/konva", ws.key, konvaBody(t, "after-move", 1, 20, 30))
	require.Equal(t, 201, r.status, "%s", r.raw)

	// Resumed, a still believes for a moment that it owns the partition: what it is sent
	// directly is refused (fenced: 503, nothing applied) or forwarded to the new owner, never
	// acknowledged from its stale copy.
	require.NoError(t, a.child.cmd.Process.Signal(syscall.SIGCONT))
	stopped = false
	acked := map[string]bool{}
	statuses := map[int]int{}
	for i := 0; i < 60; i++ {
		name := fmt.Sprintf("to-a-%d", i)
		r := call(t, "POST", a.base+"/api/v1/books/konva", ws.key, konvaBody(t, name, 1, 20, 30))
		statuses[r.status]++
		switch r.status {
		case 201:
			acked[name] = true
		case 503:
			require.NotEmpty(t, r.header.Get("Retry-After"), "%s", r.raw)
		default:
			t.Fatalf("a write through the resumed node: %d %s", r.status, r.raw)
		}
		time.Sleep(50 * time.Millisecond) // sleep: pacing the 60 writes over the seconds after the resume, while a may still think it owns the partition
	}
	t.Logf("writes through the resumed node: %v", statuses)
	require.NotZero(t, statuses[201], "the resumed node forwards to the new owner")
	names := bookNames(t, c, ws.key)
	for name := range acked {
		require.Equal(t, 1, names[name], "acknowledged %s is stored once", name)
	}
	for name, n := range names {
		require.Equal(t, 1, n, "%s stored once", name)
	}
	require.Equal(t, 1, names["after-move"])

	select {
	case got := <-pausedWrite:
		t.Logf("a write forwarded to the paused owner: %d after %s", got.status, got.took.Round(time.Millisecond))
		require.Contains(t, []int{201, 503}, got.status)
		require.Less(t, got.took, 40*time.Second)
	case <-time.After(60 * time.Second):
		t.Fatal("a write forwarded to the paused owner got no answer in a minute")
	}

	// A fourth node joins: it takes partitions from the others (cooperative-sticky); the
	// workspaces whose partitions stay where they are keep answering throughout.
	settled(t, parts, a, b, c)
	var spaces []clusterWorkspace
	for i, n := range []*clusterNode{a, b, c, a, b, c, a, b, c} {
		spaces = append(spaces, newClusterWorkspace(t, n, fmt.Sprintf("Join %d", i)))
	}
	before := map[int64]string{}
	for _, w := range spaces {
		before[w.id] = ownerOf(t, b, w.id)
	}
	stop := make(chan struct{})
	var mu sync.Mutex
	failures := map[int64][]int{} // workspace → statuses other than 201
	writes := map[int64]int{}
	var wg sync.WaitGroup
	for _, w := range spaces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := call(t, "POST", []*clusterNode{a, b, c}[i%3].base+"/api/v1/books/konva", w.key, konvaBody(t, fmt.Sprintf("join-%d", i), 1, 20, 30))
				mu.Lock()
				writes[w.id]++
				if r.status != 201 {
					failures[w.id] = append(failures[w.id], r.status)
					if r.status != 503 {
						t.Logf("workspace %d: %d %s", w.id, r.status, r.raw)
					}
				}
				mu.Unlock()
				time.Sleep(20 * time.Millisecond) // sleep: pacing each workspace's writes (load generator)
			}
		}()
	}
	testutil.Eventually(t, 30*time.Second, 20*time.Millisecond, func() error { // the writers run when d joins
		mu.Lock()
		defer mu.Unlock()
		for _, w := range spaces {
			if writes[w.id] == 0 {
				return fmt.Errorf("workspace %d's writer has completed no write yet (%d of %d workspaces have)", w.id, len(spaces), len(writes))
			}
		}
		return nil
	})
	d := tc.start(t, "node-d")
	settled(t, parts, a, b, c, d)
	time.Sleep(500 * time.Millisecond) // sleep: the writers go on a while against the settled cluster (writes after the move are checked too)
	close(stop)
	wg.Wait()
	st := clusterStatus(t, d)
	require.NotEmpty(t, st["ready"], "the new node took partitions")
	moved, stayed := 0, 0
	for _, w := range spaces {
		now := ownerOf(t, b, w.id)
		if now == before[w.id] {
			stayed++
			require.Empty(t, failures[w.id], "workspace %d did not move (%s) and answered every write (%d)", w.id, now, writes[w.id])
		} else {
			moved++
			for _, s := range failures[w.id] {
				require.Equal(t, 503, s, "a moving workspace's writes wait or get 503")
			}
		}
	}
	t.Logf("the join moved %d of %d workspaces; %v", moved, len(spaces), failures)
	require.NotZero(t, stayed)

	// The fourth node stopped (SIGTERM) leaves at once: its partitions move without waiting
	// for the session timeout, and its workspaces answer through the others.
	stopAt := time.Now()
	d.child.stop(t)
	settled(t, parts, a, b, c)
	t.Logf("a node stopped with SIGTERM: its partitions taken over %s after the signal", time.Since(stopAt).Round(time.Millisecond))
	require.Less(t, time.Since(stopAt), 6*time.Second, "faster than the session timeout")
	for _, w := range spaces {
		r := call(t, "POST", c.base+"/api/v1/books/konva", w.key, konvaBody(t, "after-stop", 1, 20, 30))
		require.Equal(t, 201, r.status, "%s", r.raw)
	}
}

// callWithTimeout sends a JSON request with a key and returns the status (0: no answer within
// timeout or a transport error); it can run outside the test's goroutine.
func callWithTimeout(timeout time.Duration, method, url, key string, body any) int {
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(method, url, bytes.NewReader(raw))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		return 0
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode
}
