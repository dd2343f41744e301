package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bytedance/sonic"
	"github.com/valyala/fasthttp"
	"golang.org/x/sync/singleflight"

	"flipbook/api"
	"flipbook/cluster"
	"flipbook/errs"
	"flipbook/mcp"
	"flipbook/storage"
)

// Cluster mode (issue 26; docs/ARCHITECTURE.md "Cluster mode"): the node's store writes through
// the changelog (cluster.StateSink), its copy of the global table follows the global topic, and
// every request whose workspace belongs to another node's partition is forwarded to that node in
// one hop (clusterFront.route), before the router sees it. The owner answers it as in one
// process: its actors, its idempotency records, its rate limits.

// ClusterConfig turns cluster mode on (flipbook serve --cluster-node).
type ClusterConfig struct {
	// Node is this node's name, unique in the cluster; AdvertiseURL is how the other nodes
	// reach it (http://HOST:PORT).
	Node, AdvertiseURL string
	// Partitions is the number of partitions, used when the cluster's topics are first created
	// (0: cluster.DefaultPartitions).
	Partitions int
	// Wait is how long a request for a partition that is changing owner waits for the new one
	// before it gets 503 with Retry-After (0: DefaultClusterWait).
	Wait time.Duration
	// SessionTimeout is how long a silent node keeps its partitions (0: the cluster's default).
	SessionTimeout time.Duration
	// ForwardTimeout bounds one forwarded exchange (0: 5 minutes, an upload's time).
	ForwardTimeout time.Duration
	// Standby makes the node a standby replica of the partitions it does not own: it follows
	// their changelog into its store and stores their reader events in its DuckDB, so taking one
	// over only catches up (cluster.Options.Standby).
	Standby bool
}

// forwardInMemory is the largest body read before it is forwarded (larger ones are piped).
const forwardInMemory = 1 << 20

// DefaultClusterWait is how long a request waits for a moving partition's new owner.
const DefaultClusterWait = 10 * time.Second

// clusterFront is the service's part of cluster mode.
type clusterFront struct {
	s    *Service // set once New has it (not read by the follower goroutine)
	log  *slog.Logger
	cfg  ClusterConfig
	node *cluster.Node
	fwd  *cluster.Forwarder

	invalidate atomic.Pointer[func()] // the caller's credential cache, once there is one
	cancel     context.CancelFunc
	followDone chan struct{}

	syncs singleflight.Group // SyncGlobal calls (lookup)

	// creds caches credential → workspace (credentialWorkspace): cleared whenever the global
	// table's credentials or workspaces change, and when it holds maxCachedCreds.
	credMu sync.RWMutex
	creds  map[string]int64

	forwarded, refused, waited atomic.Uint64
	peerSyncs                  atomic.Uint64 // other nodes' syncPeers answered here
}

// openCluster joins the cluster and opens the node's store through its changelog; it returns
// once the node's copy of the global table holds what was committed when it started.
func openCluster(cfg Config) (*clusterFront, *storage.Store, error) {
	cc := *cfg.Cluster
	if cc.Wait <= 0 {
		cc.Wait = DefaultClusterWait
	}
	if cc.ForwardTimeout <= 0 {
		cc.ForwardTimeout = 5 * time.Minute
	}
	switch {
	case cc.Node == "" || cc.AdvertiseURL == "":
		return nil, nil, errors.New("cluster mode needs the node's name and its advertised URL")
	case len(cfg.KafkaBrokers) == 0:
		return nil, nil, errors.New("cluster mode needs the Kafka brokers (--kafka-brokers)")
	case cfg.AdminToken == "":
		return nil, nil, errors.New("cluster mode needs the admin token every node shares (--admin-token)")
	case cfg.BlobURL == "":
		return nil, nil, errors.New("cluster mode needs an object store every node reaches (--blob-url): page images and uploads must outlive the node that made them")
	}
	c := &clusterFront{cfg: cc, log: cfg.Logger}
	var nodeRef atomic.Pointer[cluster.Node]
	// A new workspace is placed in a partition this node has taken over.
	home := func() (int, bool) {
		n := nodeRef.Load()
		if n == nil {
			return 0, false
		}
		ps := n.ReadyOwned()
		if len(ps) == 0 {
			return 0, false
		}
		return ps[rand.IntN(len(ps))], true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	node, err := cluster.StartNode(ctx, cluster.Options{Brokers: cfg.KafkaBrokers, Node: cc.Node, URL: cc.AdvertiseURL,
		Partitions: cc.Partitions, SessionTimeout: cc.SessionTimeout, Standby: cc.Standby, Logger: cfg.Logger},
		func(sink storage.ChangeSink, m *cluster.Member) (*storage.Store, error) {
			return storage.Open(cfg.DataDir, storage.Options{BlobURL: cfg.BlobURL, Changes: sink,
				Partitions: m.Partitions(), Home: home, SharedSecret: []byte(cfg.AdminToken)})
		})
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	nodeRef.Store(node)
	c.node = node
	c.fwd = cluster.NewForwarder(cc.Node, []byte(cfg.AdminToken), cc.ForwardTimeout)
	fctx, fcancel := context.WithCancel(context.Background())
	c.cancel, c.followDone = fcancel, make(chan struct{})
	ready := make(chan struct{})
	go c.follow(fctx, ready)
	select {
	case <-ready:
	case <-ctx.Done():
		c.close()
		return nil, nil, fmt.Errorf("cluster: the global table did not catch up: %w", ctx.Err())
	}
	return c, node.Store(), nil
}

// follow keeps the node's copy of the global table current (restarting the follower after an
// error, as a broker may be away for a while).
func (c *clusterFront) follow(ctx context.Context, ready chan struct{}) {
	defer close(c.followDone)
	m := c.node.Member()
	for {
		err := m.FollowGlobal(ctx, c.node.Store(), ready, c.applied)
		if ctx.Err() != nil {
			return
		}
		if ready != nil {
			select {
			case <-ready:
				ready = nil // closed by the run that caught up
			default: // the next run closes it
			}
		}
		c.log.Error("cluster: follow the global table", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// applied is told the global records the follower applied: a change of credentials or
// workspaces made on another node drops this node's cached ones.
func (c *clusterFront) applied(muts []storage.Mutation) {
	for _, m := range muts {
		for _, p := range authPrefixes {
			if bytes.HasPrefix(m.Key, p) {
				if f := c.invalidate.Load(); f != nil {
					(*f)()
				}
				c.credMu.Lock()
				c.creds = nil
				c.credMu.Unlock()
				return
			}
		}
	}
}

// authPrefixes are the global keys a credential's resolution reads (storage/keys.go).
var authPrefixes = [][]byte{[]byte("g/key/"), []byte("g/keyid/"), []byte("g/ws/"), []byte("g/oauth/")}

// close stops following and leaves the cluster (the store is closed with the node).
func (c *clusterFront) close() error {
	c.cancel()
	<-c.followDone
	c.fwd.Close()
	return c.node.Close()
}

// route answers ctx when its workspace's partition is not this node's: forwarded to the owner,
// or 503 when no owner took it within the wait. False: this node answers it (its partition is
// taken over here, or the request names no workspace).
func (c *clusterFront) route(ctx *fasthttp.RequestCtx, reqID string) bool {
	peer := c.fwd.FromPeer(ctx)
	if peer && string(ctx.Path()) == peerSyncPath && ctx.IsPost() {
		c.peerSync(ctx)
		return true
	}
	clientIP := ctx.RemoteIP().String()
	if peer {
		if ip := net.ParseIP(string(ctx.Request.Header.Peek("X-Forwarded-For"))); ip != nil {
			ctx.SetRemoteAddr(&net.TCPAddr{IP: ip})
		}
	}
	m := c.node.Member()
	p, ok := c.partitionOf(ctx)
	if !ok {
		return false
	}
	timer := time.NewTimer(c.cfg.Wait)
	defer timer.Stop()
	waited := false
	for {
		changed := m.Changed()
		if m.Owns(p) {
			if c.node.IsReady(p) {
				return false
			}
			select { // being taken over here: restored within the wait, or 503
			case <-c.node.Ready(p):
				return false
			case <-changed:
				waited = true
				continue
			case <-timer.C:
				return c.unavailable(ctx, p)
			}
		}
		if o, ok := m.Owner(p); ok && o.Node != c.cfg.Node && !peer {
			if n := declaredLength(ctx); ctx.Request.IsBodyStream() && n >= 0 && n <= forwardInMemory {
				// A small body is read first: a forward that could not reach the owner is
				// tried again with it (a stream is piped, and fails with its node).
				b := c.s.newBody(ctx, n, false)
				err := b.load()
				b.release()
				if err != nil {
					c.s.writeError(ctx, err)
					return true
				}
			}
			ctx.Request.Header.Set("X-Request-Id", reqID)
			early, err := c.fwd.Forward(ctx, o.URL, clientIP, exchangeOf(ctx))
			if err == nil {
				if early { // the owner answered before the whole body was sent: the rest is unread
					refusedUnread(ctx)
				}
				c.forwarded.Add(1)
				return true
			}
			if !cluster.NotSent(err) || ctx.Request.IsBodyStream() && declaredLength(ctx) != 0 {
				// The owner may have applied it before it failed (killed mid-request): not sent
				// again, the client retries (with an Idempotency-Key a write is applied once).
				c.s.log.Warn("cluster: forward", "request_id", reqID, "partition", p, "owner", o.Node, "err", err)
				return c.unavailable(ctx, p)
			}
			// The owner is away (killed, partitioned): wait for the group to move its partitions.
			select {
			case <-changed:
			case <-time.After(250 * time.Millisecond):
			case <-timer.C:
				return c.unavailable(ctx, p)
			}
			waited = true
			continue
		}
		if o, ok := m.Owner(p); ok && o.Node != c.cfg.Node && peer {
			// A node forwarded it here, but the partition is another's now (the sender's view
			// was older): not forwarded again; the client's retry reaches the owner.
			return c.unavailable(ctx, p)
		}
		// No owner yet, or the owner recorded is this node that no longer owns it: wait for
		// the next change.
		if !waited {
			c.waited.Add(1)
			waited = true
		}
		select {
		case <-changed:
		case <-timer.C:
			return c.unavailable(ctx, p)
		}
	}
}

// isAdminOAuth says whether path is an admin route of a workspace's OAuth clients and grants
// (/admin/v1/workspaces/{id}/oauth/...).
func isAdminOAuth(path []byte) bool {
	rest, ok := bytes.CutPrefix(path, []byte(AdminBase+"/workspaces/"))
	if !ok {
		return false
	}
	_, rest, _ = bytes.Cut(rest, []byte("/"))
	return bytes.HasPrefix(rest, []byte("oauth/"))
}

// peerSyncPath is where a node asks another to catch up with the global table (syncPeers).
const peerSyncPath = "/cluster/v1/sync-global"

// syncPeers makes every other node that owns partitions read the global table up to what was
// committed now, dropping the credentials it cached, and waits for them (at most 2 s each, in
// parallel). It runs for revocations, not for a refresh's rotation of access tokens. A revoked OAuth token is then refused by every node once the revocation answers:
// the workspace's owner kept its cached token until its follower applied the change (found by
// a review: POST /oauth/revoke answered 200, and the next call through the owner worked).
func (c *clusterFront) syncPeers() {
	var wg sync.WaitGroup
	seen := map[string]bool{c.cfg.Node: true}
	for _, o := range c.node.Member().Owners() {
		if seen[o.Node] {
			continue
		}
		seen[o.Node] = true
		wg.Add(1)
		go func(node, url string) {
			defer wg.Done()
			if err := c.fwd.Notify(url, peerSyncPath, 2*time.Second); err != nil {
				c.log.Warn("cluster: a node did not catch up with a revocation", "node", node, "err", err)
			}
		}(o.Node, o.URL)
	}
	wg.Wait()
}

// syncPeersFunc is syncPeers for oauth.Options.OnRevokeShared (nil in one process).
func (c *clusterFront) syncPeersFunc() func() {
	if c == nil {
		return nil
	}
	return c.syncPeers
}

// peerSync answers another node's syncPeers: the global table read up to now, and the cached
// credentials dropped.
func (c *clusterFront) peerSync(ctx *fasthttp.RequestCtx) {
	if err := c.syncGlobal(); err != nil {
		c.s.writeError(ctx, &api.Error{Status: 503, Type: api.TypeUnavailable, Message: "the global table could not be read: " + err.Error()})
		return
	}
	if f := c.invalidate.Load(); f != nil {
		(*f)()
	}
	c.credMu.Lock()
	c.creds = nil
	c.credMu.Unlock()
	c.peerSyncs.Add(1)
	ctx.SetStatusCode(fasthttp.StatusNoContent)
}

// exchangeOf is the kind of exchange ctx's request is forwarded as: Long for a CSV export
// (streamed, possibly for minutes) and MCP (a tool call may export too), QuickStreamed for
// files (page images, downloads: large), Quick for the rest (small answers at once). An owner
// that does not answer a quick request in time (paused, cut off) gets it a 503, not a wait of
// minutes; a body still streaming in makes the exchange Long (Forward sees to it).
func exchangeOf(ctx *fasthttp.RequestCtx) cluster.Exchange {
	path := ctx.Path()
	switch {
	case string(path) == mcp.Path || bytes.Contains(path, []byte("/exports/")):
		return cluster.Long
	case bytes.HasPrefix(path, []byte("/files/")), bytes.HasPrefix(path, []byte("/view/")) && bytes.HasSuffix(path, []byte("/download")):
		// Streamed: a download is the source PDF or pages cut from it, up to hundreds of MB,
		// which a Quick exchange held whole in the forwarding node's memory (found by a review).
		return cluster.QuickStreamed
	}
	return cluster.Quick
}

func (c *clusterFront) unavailable(ctx *fasthttp.RequestCtx, p int) bool {
	c.refused.Add(1)
	if ctx.Request.IsBodyStream() && declaredLength(ctx) != 0 {
		// Answered with (part of) its body still on the connection: closed after the answer
		// (a lingering close), so the rest is never read as the next request.
		refusedUnread(ctx)
	}
	c.s.writeError(ctx, &api.Error{Status: 503, Type: api.TypeUnavailable, RetryAfter: 1,
		Message: fmt.Sprintf("this workspace's partition (%d) is moving between nodes; retry shortly", p)})
	return true
}

// partitionOf is the partition whose owner answers ctx's request: its workspace's
// (workspaceOf), or, for a new workspace on a node that has no partition yet, any partition.
func (c *clusterFront) partitionOf(ctx *fasthttp.RequestCtx) (int, bool) {
	m := c.node.Member()
	if path := ctx.Path(); bytes.HasPrefix(path, []byte("/oauth/")) || isAdminOAuth(path) {
		// The authorization server's state (clients, codes, tokens) is global: one node, the
		// owner of partition 0, writes it, so a code issued by one request is there for the next
		// whatever node the client reaches; it reads the global table after what other nodes
		// wrote (a key pasted on the consent page made through another node). An admin's
		// revocation of a workspace's clients and grants runs there too, ordered with the
		// refreshes (oauth.Store's grantMu): run by the workspace's owner, a refresh in flight
		// on partition 0's owner issued tokens that outlived the revocation (found by a
		// review: TestClusterAdminRevokeRacesRefresh, 2 live tokens in 1 run of 5).
		if c.node.IsReady(0) {
			_ = c.syncGlobal()
		}
		return 0, true
	}
	if string(ctx.Path()) == AdminBase+"/workspaces" && ctx.IsPost() {
		if len(c.node.ReadyOwned()) > 0 {
			return 0, false // placed in one of this node's partitions (storage.NextHomeID)
		}
		return rand.IntN(m.Partitions()), true
	}
	ws, ok := c.workspaceOf(ctx)
	if !ok {
		return 0, false
	}
	return m.PartitionOf(ws), true
}

// workspaceOf is the workspace a request is for, as any node can tell from its global table:
// the admin routes' workspace or key id, a book's random id (viewer, files, collector), a
// tracked link's slug, or the credential of an API or MCP call. False: the request names none
// (a document, a credential-less call that is refused where it arrives, OAuth, admin routes of
// the whole service).
func (c *clusterFront) workspaceOf(ctx *fasthttp.RequestCtx) (int64, bool) {
	path := ctx.Path()
	seg := func(prefix string) (string, bool) {
		if !bytes.HasPrefix(path, []byte(prefix)) {
			return "", false
		}
		rest := path[len(prefix):]
		if i := bytes.IndexByte(rest, '/'); i >= 0 {
			rest = rest[:i]
		}
		return string(rest), len(rest) > 0
	}
	if v, ok := seg(AdminBase + "/workspaces/"); ok {
		id, err := strconv.ParseInt(v, 10, 64)
		return id, err == nil && id > 0
	}
	if v, ok := seg(AdminBase + "/keys/"); ok {
		// A key's id is allocated in its workspace's partition (storage.NextIDFor): id mod N
		// is that partition, which is all routing needs.
		id, err := strconv.ParseInt(v, 10, 64)
		return id, err == nil && id > 0
	}
	if bytes.HasPrefix(path, []byte(AdminBase+"/")) {
		return 0, false
	}
	for _, prefix := range []string{"/view/", "/files/"} {
		if rid, ok := seg(prefix); ok {
			return c.bookWorkspace(rid)
		}
	}
	if file, ok := seg("/sitemaps/"); ok { // a workspace's sitemap (seo.go)
		var ws int64
		slug, ok := sitemapSlug(file)
		err := c.lookup(func() (err error) { ws, err = c.node.Store().WorkspaceIDBySlug(slug); return err })
		return ws, ok && err == nil
	}
	if slug, ok := seg("/l/"); ok {
		var t storage.Tenant
		err := c.lookup(func() (err error) { t, err = c.node.Store().TrackedLinkTenant(slug); return err })
		return t.Workspace, err == nil
	}
	if string(path) == "/collect" {
		// By the body's book_id, the one the handler reads: a book_id in the URL as well (it
		// was read first) let a request name one book to the router and another to the
		// handler, which then appended on a node not owning that book (found by a review).
		b := c.s.newBody(ctx, collectMaxBody, false)
		err := b.load()
		b.release() // the bytes stay in the request; forwarding or the handler use them
		if err != nil {
			return 0, false // the handler answers the same error
		}
		var rid string
		if n, err := sonic.Get(ctx.PostBody(), "book_id"); err == nil {
			rid, _ = n.String()
		}
		if rid == "" {
			return 0, false
		}
		return c.bookWorkspace(rid)
	}
	if string(path) == APIBase+"/health" {
		return 0, false // this node's own health, whatever credential comes with it
	}
	if bytes.HasPrefix(path, []byte(APIBase+"/")) || string(path) == mcp.Path {
		tok := bearer(ctx)
		if tok == "" {
			tok = string(ctx.QueryArgs().Peek("api_key"))
		}
		if tok == "" {
			return 0, false
		}
		return c.credentialWorkspace(tok)
	}
	return 0, false
}

func (c *clusterFront) bookWorkspace(rid string) (int64, bool) {
	var t storage.Tenant
	err := c.lookup(func() (err error) { t, err = c.node.Store().BookTenant(rid); return err })
	return t.Workspace, err == nil
}

// maxCachedCreds bounds the credential cache (past it, it starts again empty).
const maxCachedCreds = 100_000

// credentialWorkspace is the workspace of an API key or an OAuth access token.
func (c *clusterFront) credentialWorkspace(tok string) (int64, bool) {
	c.credMu.RLock()
	ws, ok := c.creds[tok]
	c.credMu.RUnlock()
	if ok {
		return ws, true
	}
	ws, ok = c.lookupCredential(tok)
	if ok {
		c.credMu.Lock()
		if c.creds == nil || len(c.creds) >= maxCachedCreds {
			c.creds = map[string]int64{}
		}
		c.creds[tok] = ws
		c.credMu.Unlock()
	}
	return ws, ok
}

func (c *clusterFront) lookupCredential(tok string) (int64, bool) {
	st := c.node.Store()
	var ws int64
	err := c.lookup(func() error {
		if c.s.oauth.IsToken(tok) {
			g, err := c.s.oauth.Verify(context.Background(), tok)
			if err != nil {
				return errs.ErrNotFound
			}
			k, err := st.KeyByID(g.KeyID)
			if err != nil {
				return err
			}
			ws = k.Workspace
			return nil
		}
		k, err := st.KeyByHash(storage.HashSecret(tok))
		if err != nil {
			return err
		}
		ws = k.Workspace
		return nil
	})
	return ws, err == nil
}

// lookup reads the global table; what it does not hold yet may have just been written through
// another node: it is read again once this node's copy caught up with the global topic (at
// most a second later; a miss after that is a real one, answered where the request arrived).
func (c *clusterFront) lookup(read func() error) error {
	err := read()
	if !errors.Is(err, errs.ErrNotFound) {
		return err
	}
	if c.syncGlobal() != nil {
		return err
	}
	return read()
}

// syncGlobal waits (at most a second) until this node's copy of the global table holds what was
// committed to the global topic when it was called. Concurrent calls share one look at the
// topic's end: a flood of wrong credentials makes one request to Kafka at a time, not one each.
func (c *clusterFront) syncGlobal() error {
	_, err, _ := c.syncs.Do("", func() (any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return nil, c.node.Member().SyncGlobal(ctx)
	})
	return err
}

// adminCluster answers GET /admin/v1/cluster (flipbook admin cluster status).
func (s *Service) adminCluster(r *api.Request) (*api.Data[map[string]any], error) {
	if s.cluster == nil {
		return nil, &api.Error{Status: 404, Type: api.TypeNotFound, Message: "this service runs as one process, not as a cluster node (flipbook serve --cluster-node)"}
	}
	return api.OK(s.cluster.status()), nil
}

// health is the node's view of the cluster, from memory only (no request to Kafka).
func (c *clusterFront) health() *api.ClusterHealth {
	m := c.node.Member()
	h := &api.ClusterHealth{Node: c.cfg.Node, URL: c.cfg.AdvertiseURL, Partitions: m.Partitions(),
		Owned: m.Owned(), Ready: c.node.ReadyOwned(), Owners: map[string]string{}, Restoring: []api.ClusterRestore{},
		GlobalLag: m.GlobalLag()}
	if h.Ready == nil {
		h.Ready = []int{}
	}
	for p, o := range m.Owners() {
		h.Owners[strconv.Itoa(p)] = o.Node
	}
	for p, r := range c.node.Restoring() {
		h.Restoring = append(h.Restoring, api.ClusterRestore{Partition: p, From: r.From, To: r.To, Applied: r.Applied.Load()})
	}
	if err := c.node.Err(); err != nil {
		h.Error = err.Error()
	}
	return h
}

// status is the node's view of the cluster (GET /admin/v1/cluster): health's, with every
// owner's URL and generation, the global topic's end as Kafka says now, and the counters.
func (c *clusterFront) status() map[string]any {
	m := c.node.Member()
	h := c.health()
	owners := map[string]any{}
	for p, o := range m.Owners() {
		owners[strconv.Itoa(p)] = map[string]any{"node": o.Node, "url": o.URL, "generation": o.Generation}
	}
	records, took := c.node.Restored()
	out := map[string]any{"node": h.Node, "url": h.URL, "partitions": h.Partitions,
		"owned": h.Owned, "ready": h.Ready, "owners": owners, "restoring": h.Restoring,
		"restored_records": records, "restore_seconds": took.Seconds(),
		"standby": c.cfg.Standby, "standby_applied": c.node.StandbyApplied(),
		"global_applied": m.GlobalApplied(),
		"forwarded":      c.forwarded.Load(), "waited": c.waited.Load(), "refused": c.refused.Load()}
	// Not derived from the request's context: a fasthttp RequestCtx is pooled, and a context
	// derived from it watches it after the request ended (a race, and a wrong cancellation).
	tctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if end, err := m.GlobalEnd(tctx); err == nil {
		out["global_end"] = end
		out["global_lag"] = max(end-m.GlobalApplied(), 0)
	}
	if h.Error != "" {
		out["takeover_error"] = h.Error
	}
	return out
}

// ownsFunc says whether a workspace's partition is taken over here (nil in one process: all).
func (c *clusterFront) ownsFunc() func(int64) bool {
	if c == nil {
		return nil
	}
	return func(ws int64) bool { return c.node.IsReady(c.node.Member().PartitionOf(ws)) }
}

// syncFunc is syncGlobal for api.CallerOptions (nil in one process).
func (c *clusterFront) syncFunc() func() error {
	if c == nil {
		return nil
	}
	return c.syncGlobal
}
