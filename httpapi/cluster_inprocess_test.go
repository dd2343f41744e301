package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"
	"golang.org/x/oauth2/clientcredentials"

	"flipbook/internal/testutil"
)

// Cluster mode in process (found by a review; each test failed before its fix): two nodes (two Services, each a harness on its own
// loopback listener) over kfake and an in-process S3-protocol store.

// inProcessCluster is a two-node cluster of two partitions.
type inProcessCluster struct {
	nodes []*harness
}

func newInProcessCluster(t *testing.T) *inProcessCluster {
	t.Helper()
	kc, err := kfake.NewCluster(kfake.NumBrokers(1))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	s3 := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
	t.Cleanup(s3.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "k")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	lns := make([]net.Listener, 2)
	for i := range lns {
		lns[i], err = net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
	}
	public := "http://" + lns[0].Addr().String()
	rc := &inProcessCluster{}
	for i, ln := range lns {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		cfg.AdminToken = testAdminToken
		cfg.RateWorkspace, cfg.RateEndpoint, cfg.RateUnauthenticated, cfg.RateCollect = 0, 0, 0, 0
		cfg.KafkaBrokers = kc.ListenAddrs()
		cfg.BlobURL = "s3://flipbook?endpoint=" + s3.URL + "&region=us-east-1"
		cfg.PublicURL = public
		cfg.AllowPrivateTargets = true
		cfg.Cluster = &ClusterConfig{Node: fmt.Sprintf("node-%d", i), AdvertiseURL: "http://" + ln.Addr().String(),
			Partitions: 2, SessionTimeout: 6 * time.Second}
		h := &harness{cfg: cfg, admin: testAdminToken, http: &http.Client{Timeout: 60 * time.Second}, tb: t, ln: keepListener(ln)}
		t.Cleanup(func() {
			h.stop(t)
			h.ln.close()
		})
		rc.nodes = append(rc.nodes, h)
	}
	// Started one after the other (two at once race to create the bucket); a node's start
	// waits for the global table, not for the other node.
	for _, h := range rc.nodes {
		h.start(t)
	}
	// Settled: each node ready with one partition, and both know both owners.
	testutil.Eventually(t, 60*time.Second, 50*time.Millisecond, func() error {
		for _, h := range rc.nodes {
			c := h.svc.cluster
			if len(c.node.ReadyOwned()) != 1 || len(c.node.Member().Owners()) != 2 {
				return fmt.Errorf("%s: ready %v, owners %v", c.cfg.Node, c.node.ReadyOwned(), c.node.Member().Owners())
			}
			for p, o := range c.node.Member().Owners() {
				other := rc.nodes[0]
				if other == h {
					other = rc.nodes[1]
				}
				if !(o.Node == c.cfg.Node && c.node.IsReady(p)) && !(o.Node == other.cfg.Cluster.Node && other.svc.cluster.node.IsReady(p)) {
					return fmt.Errorf("%s: partition %d owner %s not ready", c.cfg.Node, p, o.Node)
				}
			}
		}
		return nil
	})
	return rc
}

// owner0 is the node owning partition 0 (the OAuth server's node) and the other one.
func (rc *inProcessCluster) owner0(t *testing.T) (p0, other *harness) {
	t.Helper()
	if rc.nodes[0].svc.cluster.node.IsReady(0) {
		return rc.nodes[0], rc.nodes[1]
	}
	require.True(t, rc.nodes[1].svc.cluster.node.IsReady(0))
	return rc.nodes[1], rc.nodes[0]
}

// slowBody is a request body that sends head, waits pause (a client on a slow link, or one
// whose next bytes are still being read from disk), then sends tail.
type slowBody struct {
	head, tail []byte
	pause      time.Duration
	paused     bool
}

func (b *slowBody) Read(p []byte) (int, error) {
	if len(b.head) > 0 {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if !b.paused {
		b.paused = true
		time.Sleep(b.pause) // sleep: the client's link stalls; nothing to wait for
	}
	if len(b.tail) > 0 {
		n := copy(p, b.tail)
		b.tail = b.tail[n:]
		return n, nil
	}
	return 0, io.EOF
}

// A request with a body over forwardInMemory (piped to the owner) that the owner
// refuses before reading it (403: the key lacks books:write) must reach the client as the
// owner's answer, through a forwarding node as directly. The client's body arrives with a
// stall of 3 s (longer than the owner's lingering close, 2 s).
func TestClusterForwardedPipedBodyRefusedEarly(t *testing.T) {
	rc := newInProcessCluster(t)
	owner, fwd := rc.nodes[0], rc.nodes[1]
	// A workspace made through node 0 is placed in node 0's partition.
	key, ws := owner.workspaceKey(t, "company", "live", "books:read")
	require.True(t, owner.svc.cluster.node.IsReady(owner.svc.cluster.node.Member().PartitionOf(ws)))

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, err := mw.CreateFormFile("files[]", "big.pdf")
	require.NoError(t, err)
	_, _ = fw.Write(append([]byte("%PDF-1.4\n"), bytes.Repeat([]byte("x"), 8<<20)...))
	require.NoError(t, mw.Close())
	all := form.Bytes()
	require.Greater(t, len(all), forwardInMemory)

	send := func(base string) (int, string) {
		body := &slowBody{head: all[:2<<20], tail: all[2<<20:], pause: 3 * time.Second}
		req, err := http.NewRequest("POST", base+"/api/v1/books", body)
		require.NoError(t, err)
		req.ContentLength = int64(len(all))
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	st, b := send(owner.base)
	require.Equal(t, 403, st, "directly at the owner: %s", b)
	st, b = send(fwd.base)
	t.Logf("through the forwarding node: %d %s", st, b)
	require.Equal(t, 403, st, "through the forwarding node, the owner's answer: %s", b)

	// A body the owner takes is piped through whole, with its length or chunked.
	key, _ = owner.workspaceKey(t, "company", "live", "*")
	for _, length := range []int64{int64(len(all)), -1} {
		body := &slowBody{head: all[:2<<20], tail: all[2<<20:], pause: 100 * time.Millisecond}
		req, err := http.NewRequest("POST", fwd.base+"/api/v1/books", body)
		require.NoError(t, err)
		req.ContentLength = length
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, 202, res.StatusCode, "length %d: %s", length, b)
	}
}

// An admin revocation of OAuth grants and clients is answered by the workspace's
// owner, while the authorization server's state is written by partition 0's owner. Whatever
// node the revocation goes through, the revoked tokens must be refused from the next request
// through every node, refresh tokens included, and a revoked client-credentials client must get
// no new token through any node.
func TestClusterAdminOAuthRevocationEverywhere(t *testing.T) {
	rc := newInProcessCluster(t)
	p0, other := rc.owner0(t)
	// The workspace is placed in the other node's partition: the admin routes run there, the
	// OAuth endpoints on p0.
	key, ws := other.workspaceKey(t, "company", "live", "*")
	require.NotEqual(t, 0, other.svc.cluster.node.Member().PartitionOf(ws))
	pub := rc.nodes[0] // the nodes' public URL is node 0's: OAuth resources are issued for it
	ctx := context.Background()
	books := func(h *harness, tok string) int { return h.do(t, "GET", "/api/v1/books", tok, nil).Status }
	grantsOf := func(h *harness) map[string]map[string]any {
		r := h.adminDo(t, "GET", "/workspaces/"+itoa(ws)+"/oauth/grants", nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return adminByField(r, "client_id")
	}

	for _, via := range []*harness{p0, other} {
		name := via.svc.cluster.cfg.Node
		// A grant with a refresh token (authorization code, approved through the public URL)
		// and a client-credentials client registered with the workspace's key.
		cfg := oauthClient(t, pub, "http://127.0.0.1:9/callback")
		tok := adminCodeToken(t, pub, cfg, key)
		require.NotEmpty(t, tok.RefreshToken)
		reg := p0.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"},
			"scope": "books:read"})
		require.Equal(t, 201, reg.Status, "%s", reg.Body)
		ccID, ccSecret := reg.JSON["client_id"].(string), reg.JSON["client_secret"].(string)
		ccTok, err := (&clientcredentials.Config{ClientID: ccID, ClientSecret: ccSecret, TokenURL: other.base + "/oauth/token"}).Token(ctx)
		require.NoError(t, err)
		for _, h := range rc.nodes {
			require.Equal(t, 200, books(h, tok.AccessToken))
			require.Equal(t, 200, books(h, ccTok.AccessToken))
		}
		var grant string
		testutil.Eventually(t, 10*time.Second, 20*time.Millisecond, func() error {
			g, ok := grantsOf(via)[cfg.ClientID]
			if !ok {
				return fmt.Errorf("the grant is not listed yet")
			}
			grant = g["id"].(string)
			return nil
		})

		// The grant revoked through `via`: its access token is refused through every node at
		// once, its refresh token too.
		r := via.adminDo(t, "DELETE", "/workspaces/"+itoa(ws)+"/oauth/grants/"+grant, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, h := range rc.nodes {
			require.Equal(t, 401, books(h, tok.AccessToken), "revoked grant's access token through %s (revoked via %s)", h.svc.cluster.cfg.Node, name)
			c := *cfg
			c.Endpoint.TokenURL = h.base + "/oauth/token"
			_, err := adminRefresh(&c, tok.RefreshToken)
			require.Error(t, err, "revoked grant's refresh token through %s (revoked via %s)", h.svc.cluster.cfg.Node, name)
		}

		// The client-credentials client revoked through `via`: its token refused, and no new
		// token for it through any node.
		r = via.adminDo(t, "DELETE", "/workspaces/"+itoa(ws)+"/oauth/clients/"+ccID, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		for _, h := range rc.nodes {
			require.Equal(t, 401, books(h, ccTok.AccessToken), "revoked client's token through %s (revoked via %s)", h.svc.cluster.cfg.Node, name)
			_, err := (&clientcredentials.Config{ClientID: ccID, ClientSecret: ccSecret, TokenURL: h.base + "/oauth/token"}).Token(ctx)
			require.Error(t, err, "a token for the revoked client through %s (revoked via %s)", h.svc.cluster.cfg.Node, name)
		}
	}
}

// The race: an admin revoke of a grant (run by the workspace's owner) while a
// refresh of that grant is in flight on partition 0's owner. In one process oauth.Store's
// grantMu orders the two, so the refresh either fails or its new tokens are ended by the
// revoke. After both returned and both nodes caught up with the global table, no token of the
// grant may work.
func TestClusterAdminRevokeRacesRefresh(t *testing.T) {
	rc := newInProcessCluster(t)
	p0, other := rc.owner0(t)
	key, ws := other.workspaceKey(t, "company", "live", "*")
	require.NotEqual(t, 0, other.svc.cluster.node.Member().PartitionOf(ws))
	pub := rc.nodes[0]
	cfg := oauthClient(t, pub, "http://127.0.0.1:9/callback")
	live, refreshes := 0, 0
	for i := range 15 {
		tok := adminCodeToken(t, pub, cfg, key)
		var grant string
		testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
			r := other.adminDo(t, "GET", "/workspaces/"+itoa(ws)+"/oauth/grants", nil)
			for _, g := range r.list() {
				m := g.(map[string]any)
				if m["active"] == true {
					grant = m["id"].(string)
					return nil
				}
			}
			return fmt.Errorf("no active grant listed yet")
		})
		c := *cfg
		c.Endpoint.TokenURL = p0.base + "/oauth/token"
		done := make(chan struct{})
		var refreshed *oauth2Token
		go func() {
			defer close(done)
			if nt, err := adminRefresh(&c, tok.RefreshToken); err == nil {
				refreshed = &oauth2Token{access: nt.AccessToken, refresh: nt.RefreshToken}
			}
		}()
		time.Sleep(time.Duration(i*2) * time.Millisecond) // sleep: staggers the revoke against the refresh, round by round (0-28 ms)
		r := other.adminDo(t, "DELETE", "/workspaces/"+itoa(ws)+"/oauth/grants/"+grant, nil)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		<-done
		require.NoError(t, p0.svc.cluster.syncGlobal())
		require.NoError(t, other.svc.cluster.syncGlobal())
		if refreshed == nil {
			continue
		}
		refreshes++
		for _, h := range rc.nodes {
			if st := h.do(t, "GET", "/api/v1/books", refreshed.access, nil).Status; st != 401 {
				live++
				t.Errorf("round %d: an access token issued by a refresh racing the admin revoke works through %s after the revoke: %d",
					i, h.svc.cluster.cfg.Node, st)
			}
		}
		if _, err := adminRefresh(&c, refreshed.refresh); err == nil {
			t.Errorf("round %d: the refresh token issued by a refresh racing the admin revoke still refreshes", i)
		}
	}
	t.Logf("refreshes that succeeded while racing the revoke: %d of 15; live tokens after revocation: %d", refreshes, live)
}

type oauth2Token struct{ access, refresh string }

// A client revoking its own access token (RFC 7009, POST
// /oauth/revoke, answered by partition 0's owner) must have it refused from the next request,
// which the workspace's owner answers (with the token in its credential cache).
func TestClusterOAuthRevokeReachesEveryNode(t *testing.T) {
	rc := newInProcessCluster(t)
	p0, other := rc.owner0(t)
	key, ws := other.workspaceKey(t, "company", "live", "*")
	require.NotEqual(t, 0, other.svc.cluster.node.Member().PartitionOf(ws))
	ctx := context.Background()
	still := 0
	for i := range 10 {
		reg := p0.do(t, "POST", "/oauth/register", key, map[string]any{"client_name": "cron", "grant_types": []string{"client_credentials"},
			"scope": "books:read"})
		require.Equal(t, 201, reg.Status, "%s", reg.Body)
		id, secret := reg.JSON["client_id"].(string), reg.JSON["client_secret"].(string)
		tok, err := (&clientcredentials.Config{ClientID: id, ClientSecret: secret, TokenURL: p0.base + "/oauth/token"}).Token(ctx)
		require.NoError(t, err)
		require.Equal(t, 200, other.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status) // cached at the owner
		req, err := http.NewRequest("POST", p0.base+"/oauth/revoke", bytes.NewBufferString("token="+tok.AccessToken+"&token_type_hint=access_token"))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(id, secret)
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, 200, res.StatusCode)
		for _, h := range []*harness{other, p0} {
			if st := h.do(t, "GET", "/api/v1/books", tok.AccessToken, nil).Status; st != 401 {
				still++
				t.Errorf("round %d: the revoked access token works through %s right after POST /oauth/revoke answered: %d", i, h.svc.cluster.cfg.Node, st)
			}
		}
	}
	t.Logf("revoked tokens still accepted: %d", still)
}

// A refresh rotates its grant's access tokens without waiting for the other nodes; a revocation
// (here an admin's, sent to the workspace's owner and run by partition 0's) has every other node
// catch up before it answers.
func TestClusterRefreshDoesNotSyncPeers(t *testing.T) {
	rc := newInProcessCluster(t)
	p0, other := rc.owner0(t)
	key, ws := other.workspaceKey(t, "company", "live", "*")
	cfg := oauthClient(t, rc.nodes[0], "http://127.0.0.1:9/callback")
	tok := adminCodeToken(t, rc.nodes[0], cfg, key)
	syncs := func() (uint64, uint64) { return p0.svc.cluster.peerSyncs.Load(), other.svc.cluster.peerSyncs.Load() }
	p0Before, otherBefore := syncs()
	c := *cfg
	c.Endpoint.TokenURL = p0.base + "/oauth/token"
	nt, err := adminRefresh(&c, tok.RefreshToken)
	require.NoError(t, err)
	p0After, otherAfter := syncs()
	require.Equal(t, p0Before, p0After, "a refresh asks no node to sync")
	require.Equal(t, otherBefore, otherAfter, "a refresh asks no node to sync")

	var grant string
	testutil.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		r := other.adminDo(t, "GET", "/workspaces/"+itoa(ws)+"/oauth/grants", nil)
		if r.Status != 200 || len(r.list()) == 0 {
			return fmt.Errorf("no grant listed yet: %d %s", r.Status, r.Body)
		}
		grant = r.list()[0].(map[string]any)["id"].(string)
		return nil
	})
	r := other.adminDo(t, "DELETE", "/workspaces/"+itoa(ws)+"/oauth/grants/"+grant, nil)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	_, otherAfter = syncs()
	require.Greater(t, otherAfter, otherBefore, "the revocation (run by partition 0's owner) had the other node catch up")
	require.Equal(t, 401, other.do(t, "GET", "/api/v1/books", nt.AccessToken, nil).Status)
	require.Equal(t, 401, p0.do(t, "GET", "/api/v1/books", nt.AccessToken, nil).Status)
}
