package httpapi

import (
	"context"
	"errors"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/api"
	"flipbook/errs"
	"flipbook/ingest"
	"flipbook/storage"
)

// The provisioning surface (outside the public API): workspaces and API keys, authenticated by
// the admin token. Its operations share the table's validation and error envelope but have no
// MCP tools and are left out of the public OpenAPI document.

// wsJSON is a workspace as the API shows it. can_rename holds only for a workspace the Shopify
// connector generated and that was not renamed yet (records written before signup_source
// existed have can_rename stored true, but cannot be renamed).
func wsJSON(w *storage.Workspace) api.Workspace {
	return api.Workspace{ID: w.ID, Name: w.Name, Slug: w.Slug, Plan: w.Plan,
		CanRename: w.CanRename && w.SignupSource == actors.SignupShopify}
}

type keyJSON struct {
	ID          int64    `json:"id"`
	WorkspaceID int64    `json:"workspace_id"`
	Name        string   `json:"name"`
	Key         string   `json:"key,omitempty"`
	Scopes      []string `json:"scopes"`
	Mode        string   `json:"mode"`
}

// keyRevoked is DELETE /admin/v1/keys/{id}'s answer.
type keyRevoked struct {
	ID      int64 `json:"id"`
	Revoked bool  `json:"revoked"`
}

// oauthClientRevoked is DELETE /admin/v1/workspaces/{id}/oauth/clients/{client}'s answer:
// grants is how many grants it ended.
type oauthClientRevoked struct {
	ClientID string `json:"client_id"`
	Revoked  bool   `json:"revoked"`
	Grants   int    `json:"grants"`
}

// oauthGrantRevoked is DELETE /admin/v1/workspaces/{id}/oauth/grants/{grant}'s answer.
type oauthGrantRevoked struct {
	ID      string `json:"id"`
	Revoked bool   `json:"revoked"`
}

func newKeyJSON(k *actors.NewKey) keyJSON {
	return keyJSON{ID: k.Key.ID, WorkspaceID: k.Key.Workspace, Name: k.Key.Name, Key: k.Secret,
		Scopes: k.Key.Scopes, Mode: k.Key.Mode.String()}
}

// Inputs of the admin operations (typed declarations, api/typed.go). Enums whose values are
// the service's own lists (plans, scopes) are set by adminOperations.
type (
	adminID struct {
		ID int64 `param:"id,path,required" min:"1"`
	}
	adminWorkspaceCreate struct {
		Name         string `param:"name,body,required" max:"255"`
		Plan         string `param:"plan,body,required"`
		SignupSource string `param:"signup_source,body" desc:"the connector that generated the workspace at sign-up; only such a workspace can be renamed (once, POST /integrations/shopify/workspace-name)"`
	}
	adminWorkspaceUpdate struct {
		adminID
		Plan string `param:"plan,body,required"`
	}
	adminKeyCreate struct {
		adminID
		Name   string   `param:"name,body" max:"255"`
		Scopes []string `param:"scopes,body,required" minitems:"1" maxitems:"32"`
		Mode   string   `param:"mode,body" enum:"live|test"`
	}
	adminOAuthClientRef struct {
		adminID
		Client string `param:"client,path,required" max:"4096" desc:"the client id, percent-encoded (a metadata-document client's id is a URL: https%3A%2F%2F…)"`
	}
	adminOAuthGrantRef struct {
		adminID
		Grant string `param:"grant,path,required" max:"128"`
	}
)

func (s *Service) adminOperations() []*api.Operation {
	plans := func(p *api.Param) { p.Enum = actors.PlanNames }
	scopes := func(p *api.Param) { p.Items.Enum = append([]string{"*"}, api.Scopes...) }
	ops := []*api.Operation{
		api.Define(api.Operation{ID: "admin.create_workspace", Method: "POST", Path: "/workspaces", Auth: api.AuthAdmin, Write: true,
			Summary: "Create a workspace.",
			Params: api.Adjust(api.Adjust(api.ParamsOf[adminWorkspaceCreate](), "plan", plans),
				"signup_source", func(p *api.Param) { p.Enum = []string{actors.SignupShopify} })}, s.adminCreateWorkspace),
		api.Define(api.Operation{ID: "admin.update_workspace", Method: "PUT", Path: "/workspaces/{id}", Auth: api.AuthAdmin, Write: true,
			Summary: "Change a workspace's plan.",
			Params:  api.Adjust(api.ParamsOf[adminWorkspaceUpdate](), "plan", plans)}, s.adminUpdateWorkspace),
		api.Define(api.Operation{ID: "admin.create_key", Method: "POST", Path: "/workspaces/{id}/keys", Auth: api.AuthAdmin, Write: true,
			Summary: "Create an API key; the key is shown only in this response.",
			Params:  api.Adjust(api.ParamsOf[adminKeyCreate](), "scopes", scopes)}, s.adminCreateKey),
		api.Define(api.Operation{ID: "admin.rotate_key", Method: "POST", Path: "/keys/{id}/rotate", Auth: api.AuthAdmin, Write: true,
			Summary: "Replace a key's secret; the old one stops working at once."}, s.adminRotateKey),
		api.Define(api.Operation{ID: "admin.revoke_key", Method: "DELETE", Path: "/keys/{id}", Auth: api.AuthAdmin, Write: true,
			Summary: "Revoke a key."}, s.adminRevokeKey),
		api.Define(api.Operation{ID: "admin.list_oauth_clients", Method: "GET", Path: "/workspaces/{id}/oauth/clients", Auth: api.AuthAdmin,
			Summary: "The OAuth clients holding grants in the workspace, and the client-credentials clients registered with its keys."}, s.adminOAuthClients),
		api.Define(api.Operation{ID: "admin.list_oauth_grants", Method: "GET", Path: "/workspaces/{id}/oauth/grants", Auth: api.AuthAdmin,
			Summary: "The workspace's OAuth grants, newest first."}, s.adminOAuthGrants),
		api.Define(api.Operation{ID: "admin.revoke_oauth_client", Method: "DELETE", Path: "/workspaces/{id}/oauth/clients/{client}", Auth: api.AuthAdmin, Write: true,
			Summary: "End every grant of a client in the workspace (and delete a client-credentials client registered with its key); its tokens are refused from the next request."}, s.adminRevokeOAuthClient),
		api.Define(api.Operation{ID: "admin.revoke_oauth_grant", Method: "DELETE", Path: "/workspaces/{id}/oauth/grants/{grant}", Auth: api.AuthAdmin, Write: true,
			Summary: "End one of the workspace's OAuth grants; its tokens are refused from the next request."}, s.adminRevokeOAuthGrant),
		api.DefineNoParams(api.Operation{ID: "admin.ingest_status", Method: "GET", Path: "/ingest", Auth: api.AuthAdmin,
			Summary: "Reader-event intake: per log partition, where the log ends and what DuckDB holds (the lag), and the consumer's counters."}, s.adminIngest),
		api.DefineNoParams(api.Operation{ID: "admin.memory", Method: "GET", Path: "/memory", Auth: api.AuthAdmin,
			Summary: "The service's memory by owner: the process (RSS), Go's heap, DuckDB's own accounting and glibc malloc."}, s.adminMemory),
		api.DefineNoParams(api.Operation{ID: "admin.cluster_status", Method: "GET", Path: "/cluster", Auth: api.AuthAdmin,
			Summary: "Cluster mode: this node, the partitions it owns and has taken over, every partition's owner, the global table's lag and the forwarding counters (404 in one process)."}, s.adminCluster),
	}
	for _, op := range ops {
		op.Base = AdminBase
	}
	return ops
}

func adminNotFound(err error, what string) error {
	if errors.Is(err, errs.ErrNotFound) {
		return api.ErrNotFound(what)
	}
	return err
}

func (s *Service) adminCreateWorkspace(_ *api.Request, in *adminWorkspaceCreate) (*api.Data[api.Workspace], error) {
	w, err := s.Actors.CreateSignupWorkspace(in.Name, in.Plan, in.SignupSource)
	if err != nil {
		return nil, err
	}
	return &api.Data[api.Workspace]{Status: 201, Data: wsJSON(w)}, nil
}

func (s *Service) adminUpdateWorkspace(_ *api.Request, in *adminWorkspaceUpdate) (*api.Data[api.Workspace], error) {
	w, err := s.Actors.SetPlan(in.ID, in.Plan)
	s.caller.InvalidateAuth()
	if err != nil {
		return nil, adminNotFound(err, "workspace")
	}
	return api.OK(wsJSON(w)), nil
}

func (s *Service) adminCreateKey(_ *api.Request, in *adminKeyCreate) (*api.Data[keyJSON], error) {
	mode := storage.ModeLive
	if in.Mode == "test" {
		mode = storage.ModeTest
	}
	name := in.Name
	if name == "" {
		name = "API key"
	}
	var scopes []string
	for _, sc := range in.Scopes {
		if !api.Contains(scopes, sc) {
			scopes = append(scopes, sc)
		}
	}
	k, err := s.Actors.CreateKey(in.ID, name, scopes, mode)
	if err != nil {
		return nil, adminNotFound(err, "workspace")
	}
	return &api.Data[keyJSON]{Status: 201, Data: newKeyJSON(k)}, nil
}

func (s *Service) adminRotateKey(_ *api.Request, in *adminID) (*api.Data[keyJSON], error) {
	k, err := s.Actors.RotateKey(in.ID)
	s.caller.InvalidateAuth()
	if err != nil {
		return nil, adminNotFound(err, "key")
	}
	return &api.Data[keyJSON]{Status: 201, Data: newKeyJSON(k)}, nil
}

func (s *Service) adminRevokeKey(_ *api.Request, in *adminID) (*api.Data[keyRevoked], error) {
	k, err := s.Actors.RevokeKey(in.ID)
	s.caller.InvalidateAuth()
	if err != nil {
		return nil, adminNotFound(err, "key")
	}
	return api.OK(keyRevoked{ID: k.ID, Revoked: true}), nil
}

// adminWorkspaceID is the {id} of an admin call on a workspace, which must exist.
func (s *Service) adminWorkspaceID(id int64) (int64, error) {
	if _, err := s.Store.Workspace(id); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return 0, api.ErrNotFound("workspace")
		}
		return 0, err
	}
	return id, nil
}

// oauthClientJSON is a client in GET /admin/v1/workspaces/{id}/oauth/clients.
type oauthClientJSON struct {
	ClientID   string   `json:"client_id"`
	Name       string   `json:"client_name"`
	URI        string   `json:"client_uri,omitempty"`
	Source     string   `json:"source"` // dcr, cimd, key; "" when the client's record is gone
	GrantTypes []string `json:"grant_types"`
	AuthMethod string   `json:"token_endpoint_auth_method"`
	CreatedAt  *string  `json:"created_at"`
	// Registered: a client-credentials client registered with a key of this workspace (key_id,
	// mode and scopes are its); revoking it deletes it.
	Registered   bool     `json:"registered"`
	KeyID        *int64   `json:"key_id"`
	Mode         string   `json:"mode,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Grants       int      `json:"grants"`
	ActiveGrants int      `json:"active_grants"`
}

// oauthGrantJSON is a grant in GET /admin/v1/workspaces/{id}/oauth/grants.
type oauthGrantJSON struct {
	ID         string   `json:"id"`
	ClientID   string   `json:"client_id"`
	ClientName string   `json:"client_name"`
	KeyID      int64    `json:"key_id"`
	Mode       string   `json:"mode"`
	Scopes     []string `json:"scopes"`
	Resources  []string `json:"resources"`
	CreatedAt  *string  `json:"created_at"`
	Active     bool     `json:"active"`     // an unexpired, unrevoked token whose key is still valid
	ExpiresAt  *string  `json:"expires_at"` // the latest expiry of its live tokens (null: none)
}

func orEmptyList(l []string) []string {
	if l == nil {
		return []string{}
	}
	return l
}

func (s *Service) adminOAuthClients(_ *api.Request, in *adminID) (*api.Data[[]oauthClientJSON], error) {
	ws, err := s.adminWorkspaceID(in.ID)
	if err != nil {
		return nil, err
	}
	list, err := s.oauth.WorkspaceClients(ws)
	if err != nil {
		return nil, err
	}
	out := make([]oauthClientJSON, 0, len(list))
	for _, c := range list {
		j := oauthClientJSON{ClientID: c.ID, Name: c.Name, URI: c.URI, Source: c.Source,
			GrantTypes: orEmptyList(c.GrantTypes), AuthMethod: c.AuthMethod, CreatedAt: fmtTime(c.CreatedAt),
			Registered: c.Registered, Mode: c.Mode, Scopes: c.Scopes, Grants: c.Grants, ActiveGrants: c.ActiveGrants}
		if c.Registered {
			j.KeyID = &c.KeyID
		}
		out = append(out, j)
	}
	return api.OK(out), nil
}

func (s *Service) adminOAuthGrants(_ *api.Request, in *adminID) (*api.Data[[]oauthGrantJSON], error) {
	ws, err := s.adminWorkspaceID(in.ID)
	if err != nil {
		return nil, err
	}
	list, err := s.oauth.WorkspaceGrants(ws)
	if err != nil {
		return nil, err
	}
	out := make([]oauthGrantJSON, 0, len(list))
	for _, g := range list {
		out = append(out, oauthGrantJSON{ID: g.ID, ClientID: g.ClientID, ClientName: g.ClientName, KeyID: g.KeyID,
			Mode: g.Mode, Scopes: orEmptyList(g.Scopes), Resources: orEmptyList(g.Audience),
			CreatedAt: fmtTime(g.CreatedAt), Active: g.Active, ExpiresAt: fmtTime(g.ExpiresAt)})
	}
	return api.OK(out), nil
}

// adminRevokeOAuthClient is DELETE /admin/v1/workspaces/{id}/oauth/clients/{client}: the
// router matches the path as sent, so a client id that is a URL comes percent-encoded in one
// segment and is decoded here. Revocation empties the credential cache (oauth.Options.OnRevoke).
func (s *Service) adminRevokeOAuthClient(_ *api.Request, in *adminOAuthClientRef) (*api.Data[oauthClientRevoked], error) {
	ws, err := s.adminWorkspaceID(in.ID)
	if err != nil {
		return nil, err
	}
	client, err := url.PathUnescape(in.Client)
	if err != nil {
		return nil, api.ErrNotFound("OAuth client")
	}
	n, err := s.oauth.RevokeClient(ws, client)
	if err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, api.ErrNotFound("OAuth client")
		}
		return nil, err
	}
	return api.OK(oauthClientRevoked{ClientID: client, Revoked: true, Grants: n}), nil
}

// adminRevokeOAuthGrant is DELETE /admin/v1/workspaces/{id}/oauth/grants/{grant}.
func (s *Service) adminRevokeOAuthGrant(_ *api.Request, in *adminOAuthGrantRef) (*api.Data[oauthGrantRevoked], error) {
	ws, err := s.adminWorkspaceID(in.ID)
	if err != nil {
		return nil, err
	}
	grant := in.Grant
	if err := s.oauth.RevokeGrantIn(ws, grant); err != nil {
		if errors.Is(err, errs.ErrNotFound) {
			return nil, api.ErrNotFound("OAuth grant")
		}
		return nil, err
	}
	return api.OK(oauthGrantRevoked{ID: grant, Revoked: true}), nil
}

// ingestPartJSON is one log partition in GET /admin/v1/ingest.
type ingestPartJSON struct {
	Partition int    `json:"partition"`
	LogEnd    uint64 `json:"log_end"` // offset the next event of the partition gets
	Stored    uint64 `json:"stored"`  // first offset not yet in DuckDB
	Lag       uint64 `json:"lag"`     // events durable in the log, not yet queryable
	// Webhooks is the webhook dispatcher's next offset (-1: not reported since start); the log
	// is trimmed below the smaller of stored and webhooks.
	Webhooks int64 `json:"webhooks"`
	// PastEnd: stored is past the log's end, so the log is not the one the analytics were
	// stored from (a topic recreated while the service ran): its events are not being stored
	// (docs/OPERATIONS.md, "Moving the event log").
	PastEnd bool `json:"past_end,omitempty"`
}

type ingestConsumerJSON struct {
	Events        uint64 `json:"events"`  // stored since the service started
	Batches       uint64 `json:"batches"` // DuckDB transactions
	Skipped       uint64 `json:"skipped"`
	Errors        uint64 `json:"errors"`
	LastError     string `json:"last_error"`
	Compactions   uint64 `json:"compactions"`
	CompactedRows uint64 `json:"compacted_rows"`
	Merges        uint64 `json:"merges"`
	Promoted      uint64 `json:"promoted"`   // runs appended to the archive at once (too big to merge)
	Reattaches    uint64 `json:"reattaches"` // times the analytics file was reattached (frees DuckDB's metadata)
	// MoveCommitMaxMs is the longest a compaction's commit kept analytics queries waiting.
	MoveCommitMaxMs float64 `json:"move_commit_max_ms"`
}

type ingestJSON struct {
	Log        string             `json:"log"` // embedded or kafka
	Partitions []ingestPartJSON   `json:"partitions"`
	LogEnd     uint64             `json:"log_end"`
	Stored     uint64             `json:"stored"`
	Lag        uint64             `json:"lag"`
	Consumer   ingestConsumerJSON `json:"consumer"`
	// Webhooks counts what the webhook dispatcher did since start.
	Webhooks actors.WebhookStats `json:"webhooks"`
}

// adminIngest is GET /admin/v1/ingest: how far the analytics store is behind the event log.
// The stored offsets are read before the log's ends, so lag is never negative; an event whose
// 202 came before the call is queryable once stored passes the log_end of its partition.
func (s *Service) adminIngest(r *api.Request) (*api.Data[ingestJSON], error) {
	stored := s.consumer.Offsets()
	st := s.consumer.Stats()
	eo, ok := s.events.(ingest.EndOffsets)
	if !ok {
		return nil, &api.Error{Status: 501, Type: api.TypeUnavailable, Message: "this event log cannot report its end offsets"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ends, err := eo.EndOffsets(ctx)
	if err != nil {
		s.log.Error("event log end offsets", "err", err)
		return nil, &api.Error{Status: 503, Type: api.TypeUnavailable, Message: "the event log did not answer; retry shortly"}
	}
	out := ingestJSON{Log: "embedded", Partitions: make([]ingestPartJSON, len(ends)),
		Consumer: ingestConsumerJSON{Events: st.Events, Batches: st.Batches, Skipped: st.Skipped, Errors: st.Errors,
			LastError: st.LastError, Compactions: st.Compactions, CompactedRows: st.CompactedRows, Merges: st.Merges,
			Promoted: st.Promoted, Reattaches: st.Reattaches, MoveCommitMaxMs: float64(st.MoveCommitMax.Microseconds()) / 1000}}
	if len(s.cfg.KafkaBrokers) > 0 {
		out.Log = "kafka"
	}
	out.Webhooks = s.Actors.WebhookStats()
	wpos := s.trimGate.Positions()["webhooks"]
	for p, end := range ends {
		var done uint64
		if p < len(stored) {
			done = stored[p]
		}
		lag := end - min(done, end)
		out.Partitions[p] = ingestPartJSON{Partition: p, LogEnd: end, Stored: done, Lag: lag, Webhooks: -1, PastEnd: done > end}
		if p < len(wpos) {
			out.Partitions[p].Webhooks = wpos[p]
		}
		out.LogEnd += end
		out.Stored += done
		out.Lag += lag
	}
	return api.OK(out), nil
}

// FirstStart is what Bootstrap created on an empty data directory.
type FirstStart struct {
	Workspace *storage.Workspace
	Key       *actors.NewKey
}

// Bootstrap creates the "Default" workspace on the company plan and a *-scoped test key when the
// data directory holds no workspace yet; it returns nil otherwise.
func (s *Service) Bootstrap() (*FirstStart, error) {
	if s.cluster != nil {
		// A cluster's nodes would each make one: its operator creates workspaces through the
		// admin API (docs/OPERATIONS.md "Running a cluster").
		return nil, nil
	}
	has, err := s.Store.HasWorkspaces()
	if err != nil || has {
		return nil, err
	}
	w, err := s.Actors.CreateWorkspace("Default", actors.PlanCompany)
	if err != nil {
		return nil, err
	}
	k, err := s.Actors.CreateKey(w.ID, "default test key", []string{"*"}, storage.ModeTest)
	if err != nil {
		return nil, err
	}
	return &FirstStart{Workspace: w, Key: k}, nil
}

type memoryGoJSON struct {
	HeapInUse uint64 `json:"heap_in_use"` // bytes in spans with objects
	Sys       uint64 `json:"sys"`         // bytes obtained from the system
	Released  uint64 `json:"released"`    // of Sys, given back
}

type memoryDuckDBJSON struct {
	Bytes     int64                 `json:"bytes"`      // sum of the tags: in memory
	TempBytes int64                 `json:"temp_bytes"` // sum of the tags: spilled
	Limit     string                `json:"limit"`      // --analytics-memory
	Tags      []analytics.MemoryTag `json:"tags"`
}

// memoryPebbleJSON is Pebble's memory (C memory: the cache in the malloc figures, the 64 MiB
// memtables in malloc's mmapped bytes).
type memoryPebbleJSON struct {
	BlockCache int64  `json:"block_cache"` // bytes held by the block cache (at most storage.DefaultCacheBytes)
	MemTables  uint64 `json:"memtables"`   // bytes allocated by memtables
}

type memoryJSON struct {
	RSS    int64                  `json:"rss"` // resident bytes of the process (/proc/self/statm)
	Go     memoryGoJSON           `json:"go"`
	DuckDB memoryDuckDBJSON       `json:"duckdb"`
	Pebble memoryPebbleJSON       `json:"pebble"`
	Malloc *analytics.MallocStats `json:"malloc"` // null without glibc
}

// adminMemory is GET /admin/v1/memory: where the process's memory is, for operators watching a
// long-running service (and the ingest benchmark, which samples it beside the RSS).
func (s *Service) adminMemory(r *api.Request) (*api.Data[memoryJSON], error) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	out := memoryJSON{RSS: selfRSS(), Go: memoryGoJSON{HeapInUse: ms.HeapInuse, Sys: ms.Sys, Released: ms.HeapReleased},
		DuckDB: memoryDuckDBJSON{Tags: []analytics.MemoryTag{}}}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	limit, tags, err := s.Analytics.Memory(ctx)
	if err != nil {
		s.log.Error("analytics memory", "err", err)
		return nil, &api.Error{Status: 503, Type: api.TypeUnavailable, Message: "the analytics store did not answer; retry shortly"}
	}
	out.DuckDB.Limit = limit
	if tags != nil {
		out.DuckDB.Tags = tags
	}
	for _, t := range tags {
		out.DuckDB.Bytes += t.Bytes
		out.DuckDB.TempBytes += t.TempBytes
	}
	if s.Store != nil {
		pm := s.Store.DB().Metrics()
		out.Pebble = memoryPebbleJSON{BlockCache: pm.BlockCache.Size, MemTables: pm.MemTable.Size}
	}
	if m, ok := analytics.ReadMallocStats(); ok {
		out.Malloc = &m
	}
	return api.OK(out), nil
}

// selfRSS is the process's resident set in bytes (0 where /proc is not there).
func selfRSS() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
