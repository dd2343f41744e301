// Package httpapi is the service's HTTP front end: the operation table (the one declaration of
// every public operation), the REST router and request pipeline built from it, the provisioning
// (admin) surface and file serving.
package httpapi

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fasthttp/router"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"flipbook/actors"
	"flipbook/actors/convert"
	"flipbook/analytics"
	"flipbook/api"
	"flipbook/ingest"
	"flipbook/mcp"
	"flipbook/oauth"
	"flipbook/storage"
)

// Defaults of Config (README and docs quote them).
const (
	DefaultAddr                = "127.0.0.1:8080"
	DefaultDataDir             = "./data"
	DefaultRateWorkspace       = api.DefaultRateWorkspace       // requests per minute per workspace (spec §8)
	DefaultRateEndpoint        = api.DefaultRateEndpoint        // per minute per workspace and operation (spec §8)
	DefaultRateUnauthenticated = api.DefaultRateUnauthenticated // per minute per IP, for calls without valid credentials (spec §8)
	DefaultMaxBodyBytes        = 256 << 20
	APIBase                    = api.Base
	AdminBase                  = "/admin/v1"
)

// Version is reported by /health.
var Version = "1.0.0"

// Config configures a Service.
type Config struct {
	Addr       string
	DataDir    string
	PublicURL  string // base of preview_url, embed_code and file URLs; default http://<Addr>
	AdminToken string // "" disables the admin surface
	// Rate limits in requests per minute; 0 turns a limit off.
	RateWorkspace       int
	RateEndpoint        int
	RateUnauthenticated int
	// KafkaBrokers puts the event log on Kafka (host:port list); empty uses the embedded log.
	KafkaBrokers []string
	KafkaTopic   string
	// RateCollect limits the public reader routes (collector, email gate) per IP per minute.
	RateCollect int
	// AnalyticsMemory is DuckDB's memory limit, e.g. "1GB" ("" = analytics.DefaultMemoryLimit).
	AnalyticsMemory string
	// IngestBacklog is how many events DuckDB may be behind what this process appended to the
	// event log before a collector request waits for it (at most IngestWait) instead of
	// appending at once; 0 = no limit. See appendEvents.
	IngestBacklog int
	MaxBodyBytes  int
	// MaxBufferedBytes is the memory request bodies may hold at once across the service
	// (body.go); past it a request gets 503 with Retry-After. 0 = DefaultMaxBufferedBytes,
	// negative = no limit.
	MaxBufferedBytes int64
	// BodyReadTimeout is how long a request body may take beyond its declared length at
	// 256 KiB/s (0 = 30 s; body.go).
	BodyReadTimeout time.Duration
	BookIdle        time.Duration
	// BlobURL keeps page images, thumbnails and logos in an S3-compatible store
	// (s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION; storage.Options.BlobURL);
	// "" keeps them in <data>/blobs.
	BlobURL string
	// OAuthDocumentRoots, when set, replace the system's roots for OAuth client metadata
	// documents served over https (tests; oauth.Options.DocumentRoots).
	OAuthDocumentRoots *x509.CertPool
	// AllowPrivateTargets lets the service fetch URLs that resolve to private, loopback or
	// link-local addresses (template images; later webhooks). Off by default (SSRF).
	AllowPrivateTargets bool
	// OAuthAccessTTL and OAuthRefreshTTL are the lifetimes of OAuth access and refresh tokens
	// (0: 1 hour and 30 days).
	OAuthAccessTTL, OAuthRefreshTTL time.Duration
	// MCPAllowedOrigins are browser origins (scheme://host[:port]) allowed to call the MCP
	// endpoint besides the service's own; requests with another Origin get 403.
	MCPAllowedOrigins []string
	// MCPSDKOnly sends every MCP message through the SDK, tools/call included (mcp.Options).
	MCPSDKOnly bool
	// MCPPageSize is the number of tools per tools/list page (0 = mcp.DefaultPageSize).
	MCPPageSize int
	// TrustGeoHeaders takes readers' locations from the visitor-location headers of an edge in
	// front of the service (Cloudflare, CloudFront). Off by default: clients could forge them.
	TrustGeoHeaders bool
	// Webhooks configure webhook delivery (zero values: defaults; PublicURL and AllowPrivate
	// are taken from this Config).
	Webhooks actors.WebhookOptions
	// MaxUploadBytes is the largest file POST /books accepts (422 above it).
	MaxUploadBytes int
	// Conversion: batches converted at once (0 = number of cores), page image size, most pages
	// of a PDF or Office document (0 = convert.DefaultMaxPages).
	ConversionWorkers int
	PageLongEdge      int
	MaxPages          int
	// NoPageText turns page text off (no pdftotext, OCR or backfill: page images only);
	// OCRLanguages are Tesseract's languages ("eng+deu"; "": English). Issue 28.
	NoPageText bool
	// NoRenditions turns the pages' WebP renditions off: none made, none offered (the viewer
	// shows the page images alone).
	NoRenditions bool
	OCRLanguages string
	// MaxCatalogItems bounds the items of one catalog (0: actors.MaxCatalogItems).
	MaxCatalogItems int64
	// ReadersExportBatch is how many readers one query of the readers exports computes (0:
	// defaultReadersExportBatch; tests lower it to walk many batches).
	ReadersExportBatch int
	// Logger receives the service's log, one line per HTTP request at info (docs/OPERATIONS.md).
	Logger *slog.Logger
	// RequestLog, when set, receives the request lines, encoded by hand (RequestLog); nil
	// sends them through Logger at info. serve points it at a LogWriter, Logger at its Direct
	// side.
	RequestLog *RequestLog
	// PProf mounts net/http/pprof at /debug/pprof/ behind the admin token (off: 404).
	PProf bool
	// Cluster, when set, runs the service as one node of a cluster (cluster.go): it needs
	// KafkaBrokers and the AdminToken every node shares.
	Cluster *ClusterConfig
}

// DefaultConfig returns the embedded defaults.
func DefaultConfig() Config {
	return Config{
		Addr:                DefaultAddr,
		DataDir:             DefaultDataDir,
		RateWorkspace:       DefaultRateWorkspace,
		RateEndpoint:        DefaultRateEndpoint,
		RateUnauthenticated: DefaultRateUnauthenticated,
		RateCollect:         DefaultRateCollect,
		IngestBacklog:       DefaultIngestBacklog,
		MaxBodyBytes:        DefaultMaxBodyBytes,
		MaxUploadBytes:      DefaultMaxUploadBytes,
	}
}

// Service is the running service: store, actors and the HTTP server.
type Service struct {
	links  // public URLs and the books' wire JSON
	cfg    Config
	log    *slog.Logger
	Store  *storage.Store
	Actors *actors.System

	ops     []*api.Operation
	mcp     *mcp.Server
	openapi openAPIDoc
	router  *router.Router
	caps    *router.Router // each route's body cap (body.go)
	srv     *fasthttp.Server
	// readersBatch is Config.ReadersExportBatch, which a test may lower on a running service.
	readersBatch atomic.Int64
	// Observability (observe.go, metrics.go): the request routes' labels, the Prometheus
	// registry, and the server of --metrics-addr (nil until ServeMetrics).
	routes     *routes
	metrics    *metrics
	metricsSrv *fasthttp.Server

	caller     *api.Caller
	cluster    *clusterFront // cluster mode (cluster.go); nil in one process
	closeStore func() error  // the store's Close, or the cluster node's
	bodies     bodyBudget    // memory request bodies hold (body.go)
	oauth      *oauth.Server
	limCollect *api.Limiter
	readers    readerTokens
	events     ingest.Log
	appended   atomic.Uint64 // events this process appended to the log
	consumer   *analytics.Consumer
	trimGate   *ingest.TrimGate
	// Analytics is the DuckDB store the consumer fills and analytics queries read.
	Analytics *analytics.DB
	streams   streamSet
	cursors   cursors

	reqPrefix string
	reqSeq    atomic.Uint64

	lnMu sync.Mutex
	lns  []net.Listener
	down bool

	stop     chan struct{}
	bg       sync.WaitGroup
	closeErr error
	closed   sync.Once
}

// New opens the store, starts the actors and builds the router.
func New(cfg Config) (*Service, error) {
	cfg = cfg.withDefaults()
	st, front, closeStore, err := openState(cfg)
	if err != nil {
		return nil, err
	}
	var sysRef atomic.Pointer[actors.System]
	ownsWS, ownsPart := front.ownership(&sysRef)
	sys, err := actors.Start(st, actors.Options{BookIdle: cfg.BookIdle, Logger: cfg.Logger, Owns: ownsWS, OwnsPartition: ownsPart,
		MaxCatalogItems: cfg.MaxCatalogItems, NoRenditions: cfg.NoRenditions,
		Conversion: actors.ConversionOptions{Workers: cfg.ConversionWorkers, LongEdge: cfg.PageLongEdge, MaxPages: cfg.MaxPages,
			NoText: cfg.NoPageText, OCRLanguages: cfg.OCRLanguages},
		ImageFetcher: func() (convert.Fetcher, func()) {
			f := newFetcher(cfg.AllowPrivateTargets)
			return f.fetch, f.close
		}})
	if err != nil {
		_ = closeStore()
		return nil, err
	}
	s := &Service{
		links: links{publicURL: cfg.PublicURL}, cfg: cfg, log: cfg.Logger, Store: st, Actors: sys, cluster: front, closeStore: closeStore,
		limCollect: api.NewLimiter(cfg.RateCollect),
		reqPrefix:  actors.RandomString(8) + "-", stop: make(chan struct{}),
		bodies: bodyBudget{max: max(cfg.MaxBufferedBytes, 0)},
	}
	s.readersBatch.Store(int64(cfg.ReadersExportBatch))
	// From here on a failure stops what was started, in reverse order (shutdownState).
	if err := s.startState(); err != nil {
		s.shutdownState()
		return nil, err
	}
	if front != nil {
		sysRef.Store(sys)
		sys.Resume() // the partitions taken over while the supervisors started
	}
	s.startFront()
	if front == nil {
		// In cluster mode other nodes store a book's files before its record commits: a folder
		// without a book may be one being made right now (docs/DECISIONS.md "Cluster mode:
		// serving").
		s.sweepOrphanFiles()
	}
	s.bg.Add(1)
	go s.housekeeping()
	return s, nil
}

// withDefaults is cfg with DefaultConfig's values where cfg leaves a field empty.
func (cfg Config) withDefaults() Config {
	def := DefaultConfig()
	if cfg.Addr == "" {
		cfg.Addr = def.Addr
	}
	if cfg.DataDir == "" {
		cfg.DataDir = def.DataDir
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = def.MaxBodyBytes
	}
	if cfg.MaxUploadBytes == 0 {
		cfg.MaxUploadBytes = def.MaxUploadBytes
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = bodyTimeoutBase
	}
	if cfg.MaxBufferedBytes == 0 {
		cfg.MaxBufferedBytes = DefaultMaxBufferedBytes
	}
	if cfg.ReadersExportBatch <= 0 {
		cfg.ReadersExportBatch = defaultReadersExportBatch
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = "http://" + cfg.Addr
	}
	cfg.PublicURL = strings.TrimRight(cfg.PublicURL, "/")
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Cluster != nil {
		// The node's events are in partitions of the cluster's count, a workspace's in the
		// partition its state is in; DuckDB holds the owned partitions' (consumer filter).
		cfg.IngestBacklog = 0 // this node's appends are not all its own consumer's
	}
	return cfg
}

// openState opens the state store: the local Pebble, or in cluster mode the node's (joined to
// the cluster: front), with what closes it.
func openState(cfg Config) (st *storage.Store, front *clusterFront, closeStore func() error, err error) {
	if cfg.Cluster != nil {
		if front, st, err = openCluster(cfg); err != nil {
			return nil, nil, nil, err
		}
		return st, front, front.close, nil
	}
	if st, err = storage.Open(cfg.DataDir, storage.Options{BlobURL: cfg.BlobURL}); err != nil {
		return nil, nil, nil, err
	}
	return st, nil, st.Close, nil
}

// ownership is what the actors' supervisors work on in cluster mode: the workspaces and
// partitions taken over here (nil, nil without a cluster: everything). A partition's queues
// are picked up once it is taken over (Resume of the system sysRef holds once started).
func (c *clusterFront) ownership(sysRef *atomic.Pointer[actors.System]) (ownsWS func(int64) bool, ownsPart func(int) bool) {
	if c == nil {
		return nil, nil
	}
	ownsPart = c.node.IsReady
	ownsWS = func(ws int64) bool { return c.node.IsReady(c.node.Member().PartitionOf(ws)) }
	// Partitions taken over together (a node's share at a rebalance) make one Resume: it
	// reads the queues as they are when it runs, after the pending flag is cleared.
	var pending atomic.Bool
	c.node.OnReady(func(int) {
		if pending.CompareAndSwap(false, true) {
			time.AfterFunc(20*time.Millisecond, func() {
				pending.Store(false)
				if sys := sysRef.Load(); sys != nil {
					sys.Resume()
				}
			})
		}
	})
	return ownsWS, ownsPart
}

// startState starts what the service keeps beside the store and the actors: the OAuth
// server, the caller, the installation's secrets, the event log, the analytics store and its
// consumer, and webhook delivery. On an error the caller stops what was started
// (shutdownState).
func (s *Service) startState() error {
	cfg, st, front := s.cfg, s.Store, s.cluster
	var err error
	// The OAuth authorization server (package oauth): access tokens are accepted wherever keys
	// are, for the resource they were issued for.
	if s.oauth, err = oauth.New(st, oauth.Options{Issuer: cfg.PublicURL, Resources: []string{s.mcpResource(), s.restResource()},
		Scopes: api.Scopes, AllowPrivate: cfg.AllowPrivateTargets, DocumentRoots: cfg.OAuthDocumentRoots, Logger: cfg.Logger,
		AccessTTL: cfg.OAuthAccessTTL, RefreshTTL: cfg.OAuthRefreshTTL, RateLimit: cfg.RateUnauthenticated,
		OnRevoke: func() { s.caller.InvalidateAuth() }, OnRevokeShared: front.syncPeersFunc()}); err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	s.caller = api.NewCaller(st, api.CallerOptions{RateWorkspace: cfg.RateWorkspace, RateEndpoint: cfg.RateEndpoint,
		RateUnauthenticated: cfg.RateUnauthenticated, AdminToken: cfg.AdminToken, Logger: cfg.Logger,
		Tokens: s.oauth, RESTResource: s.restResource(), MCPResource: s.mcpResource(), SyncGlobal: front.syncFunc()})
	if s.cursors.key, err = st.Secret("cursor_secret"); err != nil {
		return err
	}
	if s.readers.key, err = st.Secret("reader_secret"); err != nil {
		return err
	}
	if front != nil {
		front.s = s
		inv := s.caller.InvalidateAuth
		front.invalidate.Store(&inv)
	}
	if len(cfg.KafkaBrokers) > 0 {
		ko := ingest.KafkaOptions{Brokers: cfg.KafkaBrokers, Topic: cfg.KafkaTopic}
		if front != nil {
			ko.Partitions = front.node.Member().Partitions()
		}
		s.events, err = ingest.NewKafkaLog(context.Background(), ko)
	} else {
		s.events, err = ingest.NewPebbleLog(st.DB(), ingest.PebbleOptions{})
	}
	if err != nil {
		return fmt.Errorf("event log: %w", err)
	}
	var aopts []analytics.Option
	if cfg.AnalyticsMemory != "" {
		aopts = append(aopts, analytics.WithMemoryLimit(cfg.AnalyticsMemory))
	}
	if s.Analytics, err = analytics.Open(context.Background(), filepath.Join(cfg.DataDir, "analytics.duckdb"), aopts...); err != nil {
		return fmt.Errorf("analytics store: %w", err)
	}
	// The log has two readers, each with its own durable position: the analytics consumer
	// (offsets in DuckDB) and the webhook dispatcher (offsets in Pebble). It is trimmed only
	// behind the slower of them.
	s.trimGate = ingest.NewTrimGate(s.events, "analytics", "webhooks")
	copts := []analytics.ConsumerOption{analytics.WithLogger(cfg.Logger), analytics.WithTrimmer(s.trimGate.Reader("analytics"))}
	if front != nil && !front.cfg.Standby {
		// A standby stores every partition's events (its queries still go to each owner), so
		// a partition it takes over has nothing to replay.
		copts = append(copts, analytics.WithPartitions(front.node.IsReady))
	}
	if s.consumer, err = analytics.NewConsumer(context.Background(), s.Analytics, s.events, copts...); err != nil {
		return fmt.Errorf("event consumer: %w", err)
	}
	s.consumer.Start()
	wo := cfg.Webhooks
	wo.PublicURL, wo.AllowPrivate = cfg.PublicURL, cfg.AllowPrivateTargets
	if err := s.Actors.StartWebhooks(s.events, s.trimGate.Reader("webhooks"), wo); err != nil {
		return fmt.Errorf("webhooks: %w", err)
	}
	return nil
}

// startFront builds what answers requests: the operations, metrics, the MCP endpoint, the
// router and the HTTP server (not yet listening).
func (s *Service) startFront() {
	cfg := s.cfg
	s.ops = s.operations()
	s.metrics = newMetrics(s)
	s.routes = newRoutes(s.metrics)
	s.mcp = mcp.New(s.caller, s.ops, mcp.Options{Name: "flipbook", Version: Version,
		ExportDir: filepath.Join(cfg.DataDir, "exports"), PutExport: putExport(s.Store), ExportUsage: s.Store.ExportUsage,
		MaxBody:        int64(s.mcpMaxBody()),
		AllowedOrigins: cfg.MCPAllowedOrigins, PageSize: cfg.MCPPageSize, SDKOnly: cfg.MCPSDKOnly, PublicHost: publicHost(cfg.PublicURL), Logger: cfg.Logger,
		Observe:          s.observeMCP,
		ResourceMetadata: s.oauth.ResourceMetadataURL(s.mcpResource()),
		ReadBody: func(ctx *fasthttp.RequestCtx) *api.Error {
			if b, ok := ctx.UserValue(bodyKey).(*body); ok {
				return b.load()
			}
			return nil
		}})
	s.router = s.buildRouter()
	// Bodies are streamed: each route reads its own, within its cap, after authentication
	// (body.go). HeaderReceived sets each body's read deadline; ReadTimeout bounds the headers.
	s.srv = &fasthttp.Server{
		Handler:                      s.serveHTTP,
		ErrorHandler:                 s.transportError,
		HeaderReceived:               s.headerReceived,
		StreamRequestBody:            true,
		DisablePreParseMultipartForm: true,
		Name:                         "flipbook",
		MaxRequestBodySize:           cfg.MaxBodyBytes,
		ReadBufferSize:               readBufferSize,
		ReadTimeout:                  headerTimeout,
		WriteTimeout:                 5 * time.Minute,
		IdleTimeout:                  2 * time.Minute,
		CloseOnShutdown:              true,
		Logger:                       fasthttpLogger{s.log},
	}
}

// validUTF8 is request bytes fit to quote in a JSON message (invalid UTF-8 as U+FFFD).
func validUTF8(b []byte) string { return strings.ToValidUTF8(string(b), "\uFFFD") }

// readBufferSize bounds a request's line and headers (fasthttp reads them into one buffer of
// this size per connection): 8 KiB, as most servers allow; more is a 431.
const readBufferSize = 8 << 10

// fasthttpLogger sends fasthttp's own messages (connection errors) to the service log, without
// the request bytes they quote (scrubTransport).
type fasthttpLogger struct{ l *slog.Logger }

func (f fasthttpLogger) Printf(format string, args ...any) {
	if f.l.Enabled(context.Background(), slog.LevelDebug) {
		f.l.Debug(scrubTransport(fmt.Sprintf(format, args...)), "component", "fasthttp")
	}
}

// Operations is the operation table (for the MCP server and the OpenAPI document).
func (s *Service) Operations() []*api.Operation { return s.ops }

// Config is the effective configuration.
func (s *Service) Config() Config { return s.cfg }

// Handler is the root HTTP handler (for tests and extra listeners): the router, with request
// logs and metrics.
func (s *Service) Handler() fasthttp.RequestHandler { return s.serveHTTP }

// Serve answers HTTP on ln until Shutdown. A Serve that starts after Shutdown began closes ln
// and returns at once.
func (s *Service) Serve(ln net.Listener) error {
	return s.serveOn(ln, func() *fasthttp.Server { return s.srv })
}

// serveOn answers on ln with the server that server returns (called with lnMu held) until
// Shutdown closes ln; after Shutdown began it closes ln and returns at once.
func (s *Service) serveOn(ln net.Listener, server func() *fasthttp.Server) error {
	s.lnMu.Lock()
	if s.down {
		s.lnMu.Unlock()
		ln.Close()
		return nil
	}
	srv := server()
	s.lns = append(s.lns, ln)
	s.lnMu.Unlock()
	err := srv.Serve(ln)
	s.lnMu.Lock()
	down := s.down
	s.lnMu.Unlock()
	if down && errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// Shutdown stops accepting, waits for in-flight requests (bounded by ctx), then stops the actors
// (each finishes what is in its inbox) and closes Pebble cleanly.
func (s *Service) Shutdown(ctx context.Context) error {
	// Close the listeners here rather than relying on fasthttp's Shutdown alone: it only knows
	// listeners whose Serve has already started, and a Serve racing a Shutdown would then
	// accept connections forever.
	s.lnMu.Lock()
	s.down = true
	for _, ln := range s.lns {
		ln.Close()
	}
	msrv := s.metricsSrv
	s.lnMu.Unlock()
	err := s.srv.ShutdownWithContext(ctx)
	if msrv != nil {
		_ = msrv.ShutdownWithContext(ctx)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		s.log.Warn("shutdown: in-flight requests did not finish in time")
	}
	// Streams (exports) still running are cut off: they hold analytics connections, which must
	// be returned before DuckDB closes.
	if !s.streams.abort(10 * time.Second) {
		s.log.Warn("shutdown: streamed responses did not stop in time")
	}
	s.shutdownState()
	return s.closeErr
}

func (s *Service) shutdownState() {
	s.closed.Do(func() {
		close(s.stop)
		s.bg.Wait()
		// The webhook reader stops before the log it reads.
		s.Actors.StopWebhooks()
		// The consumer stops before the log it reads; DuckDB closes after the consumer.
		if s.consumer != nil {
			if err := s.consumer.Close(); err != nil {
				s.log.Error("stop event consumer", "err", err)
			}
		}
		if s.events != nil {
			if err := s.events.Close(); err != nil {
				s.log.Error("close event log", "err", err)
			}
		}
		if s.metrics != nil {
			s.metrics.duck.close() // a scrape's query of DuckDB's memory ends first
		}
		if s.Analytics != nil {
			if err := s.Analytics.Close(); err != nil {
				s.log.Error("close analytics store", "err", err)
			}
		}
		s.Actors.Stop()
		s.closeErr = s.closeStore()
	})
}

func (s *Service) housekeeping() {
	defer s.bg.Done()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	minutes := 0
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.caller.Sweep(now)
			if s.limCollect != nil {
				s.limCollect.Sweep(now)
			}
			if minutes++; minutes%10 == 0 {
				if _, err := s.Store.ExpireIdemOf(now, s.cluster.ownsFunc()); err != nil {
					s.log.Error("expire idempotency entries", "err", err)
				}
			}
			// Hourly: OAuth grants nothing can use any more (in cluster mode by their one writer,
			// the owner of partition 0: "Cluster mode: serving" in docs/DECISIONS.md).
			if minutes%60 == 0 && (s.cluster == nil || s.cluster.node.IsReady(0)) {
				if n, err := s.oauth.Purge(now); err != nil {
					s.log.Error("purge expired OAuth grants", "err", err)
				} else if n > 0 {
					s.log.Info("purged expired OAuth grants", "count", n)
				}
			}
		}
	}
}

// sweepOrphanFiles removes file folders of books that were never committed (a crash between
// writing the files of a new book and its record).
func (s *Service) sweepOrphanFiles() {
	n, err := s.Store.Blobs.Sweep(func(rid string) bool {
		if storage.IsBrandFolder(rid) {
			return true
		}
		ok, err := s.Store.BookExists(rid)
		return err != nil || ok
	})
	if err != nil {
		s.log.Error("sweep orphan files", "err", err)
	} else if n > 0 {
		s.log.Info("removed orphan file folders", "count", n)
	}
}

func (s *Service) buildRouter() *router.Router {
	r := router.New()
	r.RedirectTrailingSlash = false
	r.RedirectFixedPath = false
	// Every route is registered with the labels of its requests' log line and metrics
	// (observe.go): the operation id, or a fixed name for routes outside the table.
	// Routes outside the operation table and MCP read their body (at most routeBody bytes)
	// before their handler; operations read theirs in serveOp, once authorized (body.go).
	// Each route's cap is also in s.caps, where headerReceived looks it up (body.go).
	s.caps = router.New()
	s.caps.RedirectTrailingSlash, s.caps.RedirectFixedPath = false, false
	handleRaw := func(method, path, label string, limit int, h fasthttp.RequestHandler) {
		r.Handle(method, path, s.labeled(label, path, h))
		s.caps.Handle(method, path, capHandler(limit))
	}
	handle := func(method, path, label string, h fasthttp.RequestHandler) {
		handleRaw(method, path, label, routeBody, s.withBody(routeBody, h))
	}
	for _, op := range s.ops {
		op := op
		handleRaw(op.Method, op.Base+op.Path, op.ID, op.BodyCap(), func(ctx *fasthttp.RequestCtx) { s.serveOp(ctx, op) })
		if op.Tool != "" && !op.Internal {
			s.routes.tools[op] = s.routes.get(op.Tool, mcp.Path)
		}
	}
	serveMCP := func(ctx *fasthttp.RequestCtx) {
		reqID := s.requestID(ctx)
		// The MCP server reads the body once it authenticated the caller (Options.ReadBody).
		b := s.newBody(ctx, s.mcpMaxBody(), false)
		b.factor = mcpBufferedFactor
		defer b.release()
		ctx.SetUserValue(bodyKey, b)
		s.mcp.Serve(ctx, reqID, s.writeError)
		ctx.RemoveUserValue(bodyKey)
		if !b.loaded && (ctx.Request.IsBodyStream() || b.overCap()) {
			refusedUnread(ctx) // refused with its body unread
		}
	}
	for _, m := range []string{"POST", "GET", "DELETE"} {
		handleRaw(m, mcp.Path, "mcp", s.mcpMaxBody(), serveMCP)
	}
	handle("GET", APIBase+"/openapi.json", "openapi", s.serveOpenAPI)
	handle("GET", "/api/docs", "api_docs", s.serveAPIDocs)
	handle("GET", "/api/docs/{name}", "api_docs", s.serveAPIDocs)
	handle("GET", "/l/{slug}", "tracked_link", s.followTrackedLink)
	prepareViewerAssets() // minified and compressed in the background (viewer_assets.go)
	handle("GET", "/view/{book}", "viewer", compressHTML(s.viewBook))
	handle("GET", "/view/{book}/pages", "viewer_pages", s.viewPages)
	handle("GET", "/view/{book}/page/{page}", "viewer_page_text", compressHTML(s.viewTextPage)) // seo.go
	handle("GET", "/view/{book}/text", "viewer_text", compressHTML(s.viewText))
	handle("GET", "/view/{book}/search", "viewer_search", compressHTML(s.viewSearch))
	handle("GET", "/view/{book}/download", "viewer_download", s.viewDownload) // download.go
	handle("GET", "/sitemaps/{file}", "sitemap", s.serveSitemap)
	handle("GET", "/viewer/assets/{name}", "viewer_asset", s.viewerAsset)
	handle("GET", "/favicon.ico", "favicon", s.serveFavicon) // viewer_assets.go
	handle("GET", "/template-thumbnails/{name}", "template_thumbnail", s.serveTemplateThumb)
	// OAuth: the authorization server and the metadata documents (net/http handlers).
	oh := fasthttpadaptor.NewFastHTTPHandler(s.oauth.Handler())
	for _, m := range []string{"GET", "POST"} {
		handle(m, "/oauth/{path:*}", "oauth", oh)
		handle(m, "/.well-known/{path:*}", "well_known", oh)
	}
	handle("GET", "/files/{book}/{name}", "files", s.serveFile)
	handle("HEAD", "/files/{book}/{name}", "files", s.serveFile)
	// Operations (docs/OPERATIONS.md): metrics and profiles, behind the admin token, and not
	// routed at all (404) when the admin surface is off. Not operations of the table: they are
	// neither in the OpenAPI document nor MCP tools.
	if s.cfg.AdminToken != "" {
		handle("GET", "/metrics", "metrics", s.serveMetrics)
		if s.cfg.PProf {
			pp := s.adminOnly(pprofHandler())
			handle("GET", "/debug/pprof/{name:*}", "pprof", pp)
			handle("POST", "/debug/pprof/{name:*}", "pprof", pp)
		}
	}
	r.NotFound = s.labeled("not_found", "", func(ctx *fasthttp.RequestCtx) {
		s.writeError(ctx, &api.Error{Status: 404, Type: api.TypeNotFound,
			Message: fmt.Sprintf("no route for %s %s", validUTF8(ctx.Method()), validUTF8(ctx.Path()))})
	})
	r.MethodNotAllowed = s.labeled("method_not_allowed", "", func(ctx *fasthttp.RequestCtx) {
		s.writeError(ctx, &api.Error{Status: 405, Type: api.TypeMethodNotAllowed,
			Message: fmt.Sprintf("%s is not allowed on %s", validUTF8(ctx.Method()), validUTF8(ctx.Path()))})
	})
	r.PanicHandler = func(ctx *fasthttp.RequestCtx, v any) {
		s.log.Error("panic in handler", "request_id", s.requestID(ctx), "path", string(ctx.Path()), "panic", v)
		s.writeError(ctx, api.ErrInternal())
	}
	return r
}

// transportError renders errors fasthttp meets before a handler runs (body over the server
// limit, malformed requests) in the API's error envelope. They get a request id and a log line
// like routed requests (operation transport_error; fasthttp does not say when it began reading
// the request, so the latency is only the answer's).
func (s *Service) transportError(ctx *fasthttp.RequestCtx, err error) {
	start := time.Now()
	ri := &reqInfo{id: s.newRequestID(ctx), route: s.routes.badReq}
	ctx.Response.Header.Set("X-Request-Id", ri.id)
	var small *fasthttp.ErrSmallBuffer
	switch {
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		s.writeError(ctx, api.ErrTooLarge(s.cfg.MaxBodyBytes))
	case isTimeout(err):
		// A body (or headers) that did not arrive within its deadline (body.go).
		ctx.SetConnectionClose()
		s.writeError(ctx, &api.Error{Status: fasthttp.StatusRequestTimeout, Type: api.TypeBadRequest,
			Message: "the request did not arrive in time"})
	case errors.As(err, &small):
		s.writeError(ctx, &api.Error{Status: fasthttp.StatusRequestHeaderFieldsTooLarge, Type: api.TypeBadRequest,
			Message: fmt.Sprintf("the request line and headers are over %d KiB", readBufferSize/1024)})
	default:
		// fasthttp quotes the request's bytes (headers, a key among them): never echoed back.
		s.writeError(ctx, api.ErrBadRequest("malformed HTTP request: "+scrubTransport(err.Error())))
	}
	s.finish(ctx, ri, start)
}

// requestID is the request's id: the one serveHTTP gave it (newRequestID).
func (s *Service) requestID(ctx *fasthttp.RequestCtx) string {
	if ri := reqInfoOf(ctx); ri != nil && ri.id != "" {
		return ri.id
	}
	return s.newRequestID(ctx)
}

// newRequestID is the client's X-Request-Id when it is a safe one, else a new id.
func (s *Service) newRequestID(ctx *fasthttp.RequestCtx) string {
	if v := ctx.Request.Header.Peek("X-Request-Id"); len(v) > 0 && len(v) <= 128 && storage.ValidName(string(v)) {
		return string(v)
	}
	var buf [64]byte // the prefix is 8 characters
	return string(strconv.AppendUint(append(buf[:0], s.reqPrefix...), s.reqSeq.Add(1), 36))
}

// mcpMaxBody is the largest MCP request body: --max-body-bytes, or less, so that its
// mcpBufferedFactor reservation fits the body budget (a larger one could never be read, and got
// 503 "busy" instead of 413).
func (s *Service) mcpMaxBody() int {
	limit := s.cfg.MaxBodyBytes
	if c := int(s.cfg.MaxBufferedBytes / mcpBufferedFactor); c > 0 && c < limit {
		limit = c
	}
	return limit
}

// publicHost is the host[:port] of the public URL, "" when it names no host a browser could
// have loaded a page from (a listen address such as ":8080" or "0.0.0.0:8080" taken as the
// public URL by default).
func publicHost(u string) string {
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexByte(u, '/'); i >= 0 {
		u = u[:i]
	}
	host, _, err := net.SplitHostPort(u)
	if err != nil {
		host = u
	}
	if host == "" || host == "0.0.0.0" || host == "::" || host == "[::]" {
		return ""
	}
	return u
}

// bookURLs are the public addresses of a book.
// restResource and mcpResource are the protected resources' URLs (RFC 8707, RFC 9728).
func (s *Service) restResource() string { return s.cfg.PublicURL + APIBase }
func (s *Service) mcpResource() string  { return s.cfg.PublicURL + mcp.Path }

// putExport keeps the MCP export tools' stored CSVs in the object store when there is one
// (--blob-url: "exports/<area>/<path>"), else nil (files under <data>/exports).
func putExport(st *storage.Store) func(key, file string) error {
	if !st.ExportsRemote() {
		return nil
	}
	return st.PutExport
}
