package main

// Cluster mode (issue 26) with three `flipbook serve` child processes over an in-process Kafka
// (kfake, three brokers): any node answers any request, the owner of a workspace's partition
// applies its writes, ids stay unique across nodes.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"golang.org/x/oauth2/clientcredentials"

	"flipbook/internal/testutil"
)

const clusterAdminToken = "adm_cluster_test_shared"

// clusterPublicURL is the one public URL of the cluster's nodes (behind one load balancer in
// production): OAuth tokens are issued for its resources, whichever node issues or checks them.
const clusterPublicURL = "http://cluster.flipbook.test"

// clusterNode is one node of a test cluster: its child process and what it was started with.
type clusterNode struct {
	name, base, dir string
	args            []string
	child           *childServer
}

// freeAddr is a loopback address with a port free now (a node must know its advertised URL
// before it starts).
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

func startClusterNode(t *testing.T, tc *testCluster, name string, extra ...string) *clusterNode {
	t.Helper()
	addr := freeAddr(t)
	n := &clusterNode{name: name, base: "http://" + addr, dir: t.TempDir()}
	n.args = append([]string{"--data", n.dir, "--addr", addr, "--admin-token", clusterAdminToken,
		"--cluster-node", name, "--advertise-url", n.base, "--kafka-brokers", strings.Join(tc.brokers, ","),
		"--cluster-partitions", fmt.Sprint(tc.parts), "--cluster-session-timeout", "6s",
		"--rate-limit-endpoint", "0", "--rate-limit-workspace", "0", "--rate-limit-collect", "0",
		"--allow-private-targets", "--public-url", tc.publicURL, "--blob-url", tc.blobURL}, extra...)
	n.child = startChild(t, n.args...)
	require.Equal(t, n.base, n.child.base)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s stderr:\n%s", name, lastLines(n.child.stderr.String(), 60))
			if dir := os.Getenv("FLIPBOOK_TEST_LOGS"); dir != "" {
				_ = os.WriteFile(filepath.Join(dir, t.Name()+"-"+name+".log"), []byte(n.child.stderr.String()), 0o644)
			}
		}
	})
	return n
}

// testCluster is what a test cluster's nodes share: Kafka (kfake, three brokers) and an
// S3-protocol store (gofakes3), both in the test process, so they outlive the nodes.
type testCluster struct {
	brokers   []string
	blobURL   string
	s3        string // the S3 endpoint (http://HOST:PORT)
	parts     int
	publicURL string        // every node's --public-url
	lb        *testBalancer // when the nodes are behind one (newBalancedCluster)
}

func newTestCluster(t *testing.T, parts int) *testCluster {
	t.Helper()
	srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key") // the children inherit them
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	return &testCluster{brokers: newKafka(t), blobURL: "s3://flipbook-cluster?endpoint=" + srv.URL + "&region=us-east-1", parts: parts,
		publicURL: clusterPublicURL, s3: srv.URL}
}

func (tc *testCluster) start(t *testing.T, name string, extra ...string) *clusterNode {
	t.Helper()
	n := startClusterNode(t, tc, name, extra...)
	if tc.lb != nil {
		tc.lb.add(strings.TrimPrefix(n.base, "http://"))
	}
	return n
}

// testBalancer is a TCP load balancer on loopback, as in front of a cluster: each connection
// goes to the next node in turn.
type testBalancer struct {
	ln    net.Listener
	mu    sync.Mutex
	nodes []string
	next  int
}

// newBalancedCluster is newTestCluster with a balancer in front: the nodes' public URL is its.
func newBalancedCluster(t *testing.T, parts int) *testCluster {
	t.Helper()
	tc := newTestCluster(t, parts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tc.lb = &testBalancer{ln: ln}
	tc.publicURL = "http://" + ln.Addr().String()
	t.Cleanup(func() { ln.Close() })
	go tc.lb.serve()
	return tc
}

func (b *testBalancer) add(addr string) {
	b.mu.Lock()
	b.nodes = append(b.nodes, addr)
	b.mu.Unlock()
}

func (b *testBalancer) serve() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if len(b.nodes) == 0 {
			b.mu.Unlock()
			c.Close()
			continue
		}
		to := b.nodes[b.next%len(b.nodes)]
		b.next++
		b.mu.Unlock()
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { _, _ = io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			_, _ = io.Copy(c, up)
		}()
	}
}

func newKafka(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(3))
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// clusterStatus is GET /admin/v1/cluster of a node.
func clusterStatus(t *testing.T, n *clusterNode) map[string]any {
	t.Helper()
	r := call(t, "GET", n.base+"/admin/v1/cluster", clusterAdminToken, nil)
	require.Equal(t, 200, r.status, "%s", r.raw)
	return r.data()
}

// settled waits until every node has taken over its partitions and every partition has an
// owner that every node knows.
func settled(t *testing.T, parts int, nodes ...*clusterNode) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		owned := 0
		for _, n := range nodes {
			st := clusterStatus(t, n)
			ready, _ := st["ready"].([]any)
			if len(ready) == 0 && len(nodes) <= parts {
				return fmt.Errorf("the cluster has not settled: the group has not given %s its share yet", n.name)
			}
			owned += len(ready)
			owners, _ := st["owners"].(map[string]any)
			if len(owners) != parts {
				return fmt.Errorf("the cluster has not settled: %s knows owners of %d of %d partitions", n.name, len(owners), parts)
			}
			for p, o := range owners {
				alive := false
				for _, m := range nodes {
					alive = alive || o.(map[string]any)["node"] == m.name
				}
				if !alive {
					return fmt.Errorf("the cluster has not settled: %s sees partition %s owned by %v, not a live node", n.name, p, o.(map[string]any)["node"])
				}
			}
		}
		if owned != parts {
			return fmt.Errorf("the cluster has not settled: %d partitions taken over, want every one of %d once", owned, parts)
		}
		return nil
	})
}

func TestClusterAnyNodeAnswers(t *testing.T) {
	const parts = 6
	tc := newTestCluster(t, parts)
	a := tc.start(t, "node-a")
	b := tc.start(t, "node-b")
	c := tc.start(t, "node-c")
	nodes := []*clusterNode{a, b, c}
	settled(t, parts, nodes...)

	// Each node's health says what it owns; its metrics too; `flipbook admin cluster status`
	// prints a node's view of every partition's owner.
	for _, n := range nodes {
		h := call(t, "GET", n.base+"/api/v1/health", "", nil)
		require.Equal(t, 200, h.status, "%s", h.raw)
		cl := h.json["details"].(map[string]any)["cluster"].(map[string]any)
		require.Equal(t, n.name, cl["node"])
		require.NotEmpty(t, cl["ready"])
		require.Len(t, cl["owners"], parts)
		res, err := client.Do(func() *http.Request {
			req, _ := http.NewRequest("GET", n.base+"/metrics", nil)
			req.Header.Set("Authorization", "Bearer "+clusterAdminToken)
			return req
		}())
		require.NoError(t, err)
		metrics, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Contains(t, string(metrics), "flipbook_cluster_partitions_ready ")
		require.Contains(t, string(metrics), `flipbook_cluster_partition_owner{node="`+n.name+`"`)
	}
	var out, errOut strings.Builder
	require.NoError(t, run(context.Background(), []string{"admin", "--url", b.base, "--admin-token", clusterAdminToken, "cluster", "status"},
		func(string) string { return "" }, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), `"node-c"`)
	require.Contains(t, out.String(), `"owners"`)

	// Workspaces made through node a land in partitions a owns (no hop for their first writes);
	// ids are unique across nodes.
	seen := map[int64]string{}
	var wsIDs []int64
	for i, n := range nodes {
		for j := 0; j < 3; j++ {
			r := call(t, "POST", n.base+"/admin/v1/workspaces", clusterAdminToken,
				map[string]any{"name": fmt.Sprintf("Cluster %d-%d", i, j), "plan": "company"})
			require.Equal(t, 201, r.status, "%s", r.raw)
			id := int64(r.data()["id"].(float64))
			require.Empty(t, seen[id], "workspace id %d made twice", id)
			seen[id] = n.name
			wsIDs = append(wsIDs, id)
		}
	}
	ws := wsIDs[0] // made through node a
	// Its key, made through node c (forwarded to the owner), used through node b at once.
	r := call(t, "POST", c.base+fmt.Sprintf("/admin/v1/workspaces/%d/keys", ws), clusterAdminToken,
		map[string]any{"name": "cluster", "scopes": []string{"*"}, "mode": "live"})
	require.Equal(t, 201, r.status, "%s", r.raw)
	key := r.data()["key"].(string)

	me := call(t, "GET", b.base+"/api/v1/me", key, nil)
	require.Equal(t, 200, me.status, "%s", me.raw)

	// Books written through node b, read through node c: the same bytes from every node.
	var books []string // random ids: the API's book ids
	for i := 0; i < 5; i++ {
		body := konvaBody(t, fmt.Sprintf("Cluster book %d", i), 2, 40, 60)
		body["status"] = "publish"
		cr := call(t, "POST", b.base+"/api/v1/books/konva", key, body)
		require.Equal(t, 201, cr.status, "%s", cr.raw)
		books = append(books, cr.data()["random_id"].(string))
	}
	for _, id := range books {
		var first []byte
		for _, n := range nodes {
			g := call(t, "GET", n.base+"/api/v1/books/"+id, key, nil)
			require.Equal(t, 200, g.status, "%s via %s", g.raw, n.name)
			if first == nil {
				first = g.raw
			}
			require.Equal(t, string(first), string(g.raw), "the same answer from %s", n.name)
		}
	}
	list := call(t, "GET", c.base+"/api/v1/books?limit=100", key, nil)
	require.Equal(t, 200, list.status, "%s", list.raw)
	require.Len(t, list.json["data"], len(books))

	// The request id the client chose comes back through a forwarded request.
	owner := ownerOf(t, a, ws)
	var other *clusterNode
	for _, n := range nodes {
		if n.name != owner {
			other = n
			break
		}
	}
	rid := "cluster-req-1"
	res := callWithHeaders(t, "GET", other.base+"/api/v1/books/"+books[0], key, map[string]string{"X-Request-Id": rid})
	require.Equal(t, 200, res.status)
	require.Equal(t, rid, res.header.Get("X-Request-Id"))

	forwarded := 0.0
	for _, n := range nodes {
		forwarded += clusterStatus(t, n)["forwarded"].(float64)
	}
	require.Greater(t, forwarded, 5.0, "requests for other nodes' workspaces were forwarded")

	// The viewer and the files of a book, through every node.
	pub := call(t, "GET", a.base+"/api/v1/books/"+books[0], key, nil).data()
	for _, n := range nodes {
		v := call(t, "GET", n.base+"/view/"+books[0], "", nil)
		require.Equal(t, 200, v.status, "viewer via %s: %s", n.name, v.raw)
		require.Contains(t, string(v.raw), pub["name"].(string))
	}

	// A PDF uploaded through a node that does not own the workspace (the multipart body streamed
	// through) is converted by the owner; its pages are served by every node.
	up := uploadPDF(t, other.base, key, "cluster.pdf", bigPDF(t, 4))
	require.Equal(t, 202, up.status, "%s", up.raw)
	batch := up.data()["batch_id"].(string)
	pdfBook := up.data()["book_ids"].([]any)[0].(string)
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		if st := call(t, "GET", nodes[2].base+"/api/v1/batches/"+batch, key, nil).data()["status"]; st != "completed" {
			return fmt.Errorf("the uploaded PDF's batch is %v, want completed", st)
		}
		return nil
	})
	thumb := call(t, "GET", nodes[1].base+"/api/v1/books/"+pdfBook, key, nil).data()["thumbnail_url"].(string)
	thumbPath := thumb[strings.Index(thumb, "/files/"):]
	var thumbBytes []byte
	for _, n := range nodes {
		res, err := client.Get(n.base + thumbPath)
		require.NoError(t, err)
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode, "page image via %s", n.name)
		require.Greater(t, len(got), 100)
		if thumbBytes == nil {
			thumbBytes = got
		}
		require.Equal(t, thumbBytes, got, "the same image from %s", n.name)
		pages := call(t, "GET", n.base+"/view/"+books[0]+"/pages", "", nil) // published
		require.Equal(t, 200, pages.status, "viewer pages via %s: %s", n.name, pages.raw)
	}

	// Reader events posted to all three nodes land once each in the owner's analytics, and
	// analytics read through any node say so.
	const sessions = 12
	for i := 0; i < sessions; i++ {
		n := nodes[i%3]
		body := fmt.Sprintf(`{"book_id":%q,"session_id":"cs-%d","events":[{"type":"session_started","page_number":1},{"type":"page_segment_completed","page_number":1,"active_ms":1500}]}`, books[0], i)
		res, err := client.Post(n.base+"/collect", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		got, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 202, res.StatusCode, "collect via %s: %s", n.name, got)
	}
	for _, n := range nodes {
		testutil.Eventually(t, 30*time.Second, 50*time.Millisecond, func() error {
			r := call(t, "GET", n.base+"/api/v1/analytics/book-view-events?limit=100&book_id="+books[0], key, nil)
			require.Equal(t, 200, r.status, "%s", r.raw)
			seen := map[string]int{}
			for _, v := range r.json["data"].([]any) {
				seen[v.(map[string]any)["session_id"].(string)]++
			}
			for sid, k := range seen {
				require.Equal(t, 1, k, "session %s stored once", sid)
			}
			if len(seen) != sessions {
				return fmt.Errorf("%d of %d sessions' events are in analytics, read via %s", len(seen), sessions, n.name)
			}
			return nil
		})
	}

	// MCP through a node that does not own the workspace: the session and the tool calls are
	// the owner's.
	mcpCall(t, other.base, key, "books_list", map[string]any{"limit": 10})
	// An export stored by the tool (output_path) is an object of the store, whichever node ran it.
	ex := mcpCall(t, other.base, key, "exports_download_book_analytics_csv", map[string]any{"book_id": books[0], "output_path": "reports/cluster.csv"})
	exData, _ := json.Marshal(ex)
	require.Contains(t, string(exData), "reports/cluster.csv")
	s3c, err := minio.New(strings.TrimPrefix(tc.s3, "http://"), &minio.Options{Creds: credentials.NewStaticV4("test-key", "test-secret", ""), BucketLookup: minio.BucketLookupPath})
	require.NoError(t, err)
	obj, err := s3c.GetObject(context.Background(), "flipbook-cluster", fmt.Sprintf("exports/%d-live/reports/cluster.csv", ws), minio.GetObjectOptions{})
	require.NoError(t, err)
	csv, err := io.ReadAll(obj)
	require.NoError(t, err)
	require.Equal(t, sessions+1, strings.Count(string(csv), "\n"), "the header and one row per session: %s", csv)

	// OAuth through any node: a client-credentials client registered through one node, its
	// token issued through another (golang.org/x/oauth2's client), used through the third.
	reg := call(t, "POST", nodes[0].base+"/oauth/register", key, map[string]any{"client_name": "cluster cron",
		"grant_types": []string{"client_credentials"}, "scope": "books:read"})
	require.Equal(t, 201, reg.status, "%s", reg.raw)
	cc := &clientcredentials.Config{ClientID: reg.json["client_id"].(string), ClientSecret: reg.json["client_secret"].(string),
		TokenURL: nodes[1].base + "/oauth/token"}
	tok, err := cc.Token(context.Background())
	require.NoError(t, err)
	for _, n := range nodes {
		r := call(t, "GET", n.base+"/api/v1/books?limit=1", tok.AccessToken, nil)
		require.Equal(t, 200, r.status, "an access token via %s: %s", n.name, r.raw)
	}

	// A tracked link made through one node redirects through every node.
	tl := call(t, "POST", nodes[2].base+"/api/v1/books/"+books[0]+"/tracked-links", key, map[string]any{"name": "newsletter", "slug": "cluster-news"})
	require.Equal(t, 201, tl.status, "%s", tl.raw)
	noRedirect := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, n := range nodes {
		res, err := noRedirect.Get(n.base + "/l/cluster-news")
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 302, res.StatusCode, "/l/ via %s: %s (owner %s)", n.name, body, ownerOf(t, a, ws))
		require.Contains(t, res.Header.Get("Location"), books[0])
	}

	// A wrong key is refused by whichever node gets it.
	for _, n := range nodes {
		require.Equal(t, 401, call(t, "GET", n.base+"/api/v1/books", "wsk_live_nope", nil).status)
	}

	// Revoking a key through one node refuses it on every node.
	keyID := int64(r.data()["id"].(float64))
	rv := call(t, "DELETE", b.base+fmt.Sprintf("/admin/v1/keys/%d", keyID), clusterAdminToken, nil)
	require.Contains(t, []int{200, 204}, rv.status, "%s", rv.raw)
	for _, n := range nodes {
		testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			if r := call(t, "GET", n.base+"/api/v1/books", key, nil); r.status != 401 {
				return fmt.Errorf("the revoked key gets %d from %s, want 401: %s", r.status, n.name, r.raw)
			}
			return nil
		})
		testutil.Eventually(t, 10*time.Second, 50*time.Millisecond, func() error {
			if r := call(t, "GET", n.base+"/api/v1/books", tok.AccessToken, nil); r.status != 401 {
				return fmt.Errorf("a token the revoked key approved gets %d from %s, want 401: %s", r.status, n.name, r.raw)
			}
			return nil
		})
	}
}

// ownerOf is the node owning workspace ws's partition, as node n sees it.
func ownerOf(t *testing.T, n *clusterNode, ws int64) string {
	t.Helper()
	st := clusterStatus(t, n)
	parts := int64(st["partitions"].(float64))
	o := st["owners"].(map[string]any)[fmt.Sprint(ws%parts)].(map[string]any)
	return o["node"].(string)
}

// callWithHeaders is call without a body, with extra request headers.
func callWithHeaders(t *testing.T, method, url, key string, headers map[string]string) *reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := client.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	return decodeReply(t, res)
}

func lastLines(s string, n int) string {
	l := strings.Split(s, "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}

// mcpCall initializes an MCP session at base and calls one tool; it fails the test unless the
// tool answers without an error.
func mcpCall(t *testing.T, base, key, tool string, args map[string]any) map[string]any {
	t.Helper()
	post := func(session string, msg map[string]any) (*http.Response, map[string]any) {
		b, _ := json.Marshal(msg)
		req, err := http.NewRequest("POST", base+"/mcp/public-api", strings.NewReader(string(b)))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		res, err := client.Do(req)
		require.NoError(t, err)
		raw, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Less(t, res.StatusCode, 300, "%s", raw)
		if len(raw) == 0 {
			return res, nil
		}
		text := string(raw)
		if i := strings.Index(text, "data: "); i >= 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
			text = strings.TrimSpace(strings.SplitN(text[i+6:], "\n", 2)[0])
		}
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(text), &out), "%s", raw)
		return res, out
	}
	res, init := post("", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": map[string]any{
		"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "cluster-test", "version": "1"}}})
	require.NotNil(t, init["result"], "%v", init)
	session := res.Header.Get("Mcp-Session-Id")
	post(session, map[string]any{"jsonrpc": "2.0", "method": "notifications/initialized"})
	_, out := post(session, map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": map[string]any{"name": tool, "arguments": args}})
	result, _ := out["result"].(map[string]any)
	require.NotNil(t, result, "%v", out)
	require.NotEqual(t, true, result["isError"], "%v", result)
	return result
}

// TestClusterMCPHostThroughBalancer runs the MCP TypeScript SDK's own OAuth client (clients/
// oauth-flow.mjs, as an MCP host runs it) against a three-node cluster behind a load balancer:
// discovery, dynamic registration, consent with a key, code and PKCE, tools/list, a tool call, a
// refresh and another call, each request reaching whichever node its connection landed on.
func TestClusterMCPHostThroughBalancer(t *testing.T) {
	tc := newBalancedCluster(t, 6)
	a := tc.start(t, "node-a")
	b := tc.start(t, "node-b")
	c := tc.start(t, "node-c")
	settled(t, 6, a, b, c)
	ws := newClusterWorkspace(t, b, "MCP host")
	r := call(t, "POST", tc.publicURL+"/api/v1/books/konva", ws.key, konvaBody(t, "sdk cluster book", 1, 20, 30))
	require.Equal(t, 201, r.status, "%s", r.raw)
	env := []string{"FLIPBOOK_URL=" + tc.publicURL, "FLIPBOOK_KEY=" + ws.key, "OAUTH_MODE=dcr", "OAUTH_STATE=1",
		"OAUTH_REDIRECT=http://127.0.0.1:33418/callback", "OAUTH_TOOLS=55", "OAUTH_TOOL=books_list", `OAUTH_TOOL_ARGS={"limit": 5}`}
	stdout := runClient(t, 90*time.Second, env, "oauth-flow.mjs")
	var out struct {
		Tools         int      `json:"tools"`
		TokenRequests []string `json:"token_requests"`
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &out), "%s", stdout)
	require.Equal(t, 55, out.Tools)
	require.Equal(t, []string{"authorization_code", "refresh_token"}, out.TokenRequests)
	forwarded := 0.0
	for _, n := range []*clusterNode{a, b, c} {
		forwarded += clusterStatus(t, n)["forwarded"].(float64)
	}
	require.Greater(t, forwarded, 0.0, "some of the host's requests reached a node that forwarded them")
}

// runClient runs Node 22 with a script of clients/ (installed by make test-deps) and returns its
// stdout; the test fails when it exits non-zero.
func runClient(t *testing.T, timeout time.Duration, env []string, args ...string) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "clients"))
	require.NoError(t, err)
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	_, err = os.Stat(node)
	require.NoError(t, err, "the test clients are not installed: run make test-deps")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(dir, "node_modules", ".bin")+string(os.PathListSeparator)+os.Getenv("PATH"), "NO_COLOR=1")
	cmd.Env = append(cmd.Env, env...)
	var outb, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &errb
	require.NoError(t, cmd.Run(), "node %v\nstdout:\n%s\nstderr:\n%s", args, lastLines(outb.String(), 40), lastLines(errb.String(), 40))
	return outb.String()
}
