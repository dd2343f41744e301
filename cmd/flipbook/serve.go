package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/cluster"
	"flipbook/httpapi"
	"flipbook/mcp"
)

// envFlag reads a flag's default from the environment (FLIPBOOK_<NAME>), so flags and env vars
// configure the same settings; a flag given on the command line wins.
func envName(flagName string) string {
	return "FLIPBOOK_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

type serveFlags struct {
	cfg        httpapi.Config
	shutdown   time.Duration
	cpuprofile string
	observe    observeFlags // log, metrics listener, pprof (observe.go)
}

func parseServeFlags(args []string, getenv func(string) string, stderr io.Writer) (*serveFlags, error) {
	def := httpapi.DefaultConfig()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	str := func(name, value, help string) *string {
		if v := getenv(envName(name)); v != "" {
			value = v
		}
		return fs.String(name, value, help+" (env "+envName(name)+")")
	}
	envErrs := map[string]error{} // bad env values, reported unless the flag overrides them
	num := func(name string, value int, help string) *int {
		if v := getenv(envName(name)); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErrs[name] = fmt.Errorf("%s: %q is not an integer", envName(name), v)
			}
			value = n
		}
		return fs.Int(name, value, help+" (env "+envName(name)+")")
	}
	addr := str("addr", def.Addr, "listen address")
	data := str("data", def.DataDir, "data directory")
	public := str("public-url", "", "public base URL of preview_url, embed_code and files (default http://<addr>)")
	token := str("admin-token", "", "admin API token (default: <data>/admin-token, created on first start)")
	rws := num("rate-limit-workspace", def.RateWorkspace, "requests per minute per workspace, 0 = off")
	rep := num("rate-limit-endpoint", def.RateEndpoint, "requests per minute per workspace and operation, 0 = off")
	run := num("rate-limit-unauthenticated", def.RateUnauthenticated, "requests per minute per IP without valid credentials (API calls; each of OAuth registration, authorization and client metadata fetches has its own budget of this size), 0 = off")
	rcol := num("rate-limit-collect", def.RateCollect, "requests per minute per IP to the collector and the email gate, 0 = off")
	amem := str("analytics-memory", analytics.DefaultMemoryLimit, "DuckDB's memory limit for the analytics store (compaction sorts spill beyond it)")
	backlog := num("ingest-backlog", def.IngestBacklog, "reader events DuckDB may lag behind the event log before collector requests wait for it (at most 2 s), 0 = no limit")
	kafka := str("kafka-brokers", "", "comma-separated Kafka brokers for the event log (default: the embedded log)")
	topic := str("kafka-topic", "", "Kafka topic of reader events (default flipbook-events)")
	maxBody := num("max-body-bytes", def.MaxBodyBytes, "largest request body accepted")
	maxBuffered := num("max-buffered-bytes", httpapi.DefaultMaxBufferedBytes, "memory request bodies may hold at once (each counted 3 times its size); past it a request gets 503, -1 = no limit")
	bodyTimeout := str("body-read-timeout", "30s", "how long a request body may take beyond its length at 256 KiB/s (slower senders are cut with 408)")
	maxUpload := num("max-upload-bytes", def.MaxUploadBytes, "largest file POST /books accepts")
	blobURL := str("blob-url", "", "keep page images, thumbnails and logos in an S3-compatible store: s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION, credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: <data>/blobs)")
	workers := num("conversion-workers", 0, "batches converted at once and renderer processes at once (0 = number of cores)")
	longEdge := num("page-long-edge", 1600, "page image size: pixels of the longer side")
	maxPages := num("max-pages", 2000, "most pages of an uploaded PDF or Office document (more: the file fails before rendering)")
	private := boolVar(fs, getenv, "allow-private-targets", "allow http and private, loopback and link-local addresses for outbound requests (webhook targets, template images): local use and tests only")
	whSchedule := str("webhook-retry-schedule", "", "delays before each delivery attempt, comma-separated (default 0s,10s,1m,5m,30m,2h,6h,12h)")
	whTimeout := str("webhook-timeout", actors.DefaultWebhookTimeout.String(), "how long a webhook receiver has to answer")
	oauthTTL := str("oauth-access-ttl", "1h", "how long an OAuth access token lives")
	oauthRefresh := str("oauth-refresh-ttl", "720h", "how long an OAuth refresh token lives")
	whDisable := str("webhook-disable-after", actors.DefaultWebhookDisableAfter.String(), "a subscription whose deliveries fail this long without a success is deactivated")
	geoHdr := boolVar(fs, getenv, "trust-geo-headers", "take readers' locations from an edge's visitor-location headers (Cloudflare, CloudFront)")
	mcpOrigins := str("mcp-allowed-origins", "", "comma-separated browser origins (https://app.example) allowed to call the MCP endpoint besides the service's own")
	mcpPage := num("mcp-page-size", mcp.DefaultPageSize, "tools per page of the MCP tools/list answer")
	idle := str("book-idle", actors.DefaultBookIdle.String(), "how long an idle book actor lives")
	grace := str("shutdown-timeout", "30s", "how long shutdown waits for in-flight requests")
	cpuprofile := str("cpuprofile", "", "write a CPU profile of the service to this file, from start to shutdown")
	logLevel := str("log-level", "info", "log level: debug, info (one line per HTTP request), warn or error")
	logFormat := str("log-format", "json", "log format: json (one object per line) or text")
	metricsAddr := str("metrics-addr", "", "also serve GET /metrics without a token on this address, for a private network (default off; /metrics on the main address needs the admin token)")
	pprofOn := boolVar(fs, getenv, "pprof", "mount net/http/pprof at /debug/pprof/ behind the admin token")
	clusterNode := str("cluster-node", "", "cluster mode: this node's name, unique in the cluster (needs --kafka-brokers, --advertise-url and the --admin-token every node shares; docs/OPERATIONS.md)")
	advertise := str("advertise-url", "", "cluster mode: how the other nodes reach this one, http://HOST:PORT")
	clusterParts := num("cluster-partitions", cluster.DefaultPartitions, "cluster mode: partitions of the workspaces, used when the cluster's topics are first created")
	clusterWait := str("cluster-wait", httpapi.DefaultClusterWait.String(), "cluster mode: how long a request for a workspace whose partition is moving waits before a 503")
	clusterSession := str("cluster-session-timeout", cluster.DefaultSessionTimeout.String(), "cluster mode: how long a silent node keeps its partitions")
	clusterStandby := boolVar(fs, getenv, "cluster-standby", "cluster mode: be a standby replica of the partitions this node does not own (follow their changelog and store their events), so a takeover only catches up")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { delete(envErrs, f.Name) })
	for _, err := range envErrs {
		return nil, err
	}
	bookIdle, err := time.ParseDuration(*idle)
	if err != nil {
		return nil, fmt.Errorf("--book-idle: %w", err)
	}
	allowPrivate, err := strconv.ParseBool(private.s)
	if err != nil {
		return nil, fmt.Errorf("--allow-private-targets: %w", err)
	}
	trustGeo, err := strconv.ParseBool(geoHdr.s)
	if err != nil {
		return nil, fmt.Errorf("--trust-geo-headers: %w", err)
	}
	var wh actors.WebhookOptions
	if *whSchedule != "" {
		for _, v := range splitList(*whSchedule) {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return nil, fmt.Errorf("--webhook-retry-schedule: %q is not a duration", v)
			}
			wh.Schedule = append(wh.Schedule, d)
		}
	}
	if wh.Timeout, err = time.ParseDuration(*whTimeout); err != nil || wh.Timeout <= 0 {
		return nil, fmt.Errorf("--webhook-timeout: %q is not a positive duration", *whTimeout)
	}
	if wh.DisableAfter, err = time.ParseDuration(*whDisable); err != nil || wh.DisableAfter <= 0 {
		return nil, fmt.Errorf("--webhook-disable-after: %q is not a positive duration", *whDisable)
	}
	accessTTL, err := time.ParseDuration(*oauthTTL)
	if err != nil || accessTTL <= 0 {
		return nil, fmt.Errorf("--oauth-access-ttl: %q is not a positive duration", *oauthTTL)
	}
	refreshTTL, err := time.ParseDuration(*oauthRefresh)
	if err != nil || refreshTTL <= 0 {
		return nil, fmt.Errorf("--oauth-refresh-ttl: %q is not a positive duration", *oauthRefresh)
	}
	bodyRead, err := time.ParseDuration(*bodyTimeout)
	if err != nil || bodyRead <= 0 {
		return nil, fmt.Errorf("--body-read-timeout: %q is not a positive duration", *bodyTimeout)
	}
	shutdown, err := time.ParseDuration(*grace)
	if err != nil {
		return nil, fmt.Errorf("--shutdown-timeout: %w", err)
	}
	var cc *httpapi.ClusterConfig
	if *clusterNode != "" {
		cc = &httpapi.ClusterConfig{Node: *clusterNode, AdvertiseURL: *advertise, Partitions: *clusterParts}
		if cc.Standby, err = strconv.ParseBool(clusterStandby.s); err != nil {
			return nil, fmt.Errorf("--cluster-standby: %w", err)
		}
		if cc.Wait, err = time.ParseDuration(*clusterWait); err != nil || cc.Wait <= 0 {
			return nil, fmt.Errorf("--cluster-wait: %q is not a positive duration", *clusterWait)
		}
		if cc.SessionTimeout, err = time.ParseDuration(*clusterSession); err != nil || cc.SessionTimeout <= 0 {
			return nil, fmt.Errorf("--cluster-session-timeout: %q is not a positive duration", *clusterSession)
		}
		switch {
		case *advertise == "":
			return nil, errors.New("--cluster-node needs --advertise-url (how the other nodes reach this one)")
		case *kafka == "":
			return nil, errors.New("--cluster-node needs --kafka-brokers")
		case *token == "":
			return nil, errors.New("--cluster-node needs --admin-token, the same on every node")
		case *blobURL == "":
			return nil, errors.New("--cluster-node needs --blob-url, an S3-compatible store every node reaches")
		case *clusterParts < 1 || *clusterParts > 1<<15:
			return nil, fmt.Errorf("--cluster-partitions: %d is not between 1 and 32768", *clusterParts)
		}
	}
	obs, err := parseObserveFlags(*logLevel, *logFormat, *metricsAddr, pprofOn.s)
	if err != nil {
		return nil, err
	}
	return &serveFlags{shutdown: shutdown, cpuprofile: *cpuprofile, observe: obs, cfg: httpapi.Config{
		Addr: *addr, DataDir: *data, PublicURL: *public, AdminToken: *token,
		RateWorkspace: *rws, RateEndpoint: *rep, RateUnauthenticated: *run,
		MaxBodyBytes: *maxBody, MaxBufferedBytes: int64(*maxBuffered), BodyReadTimeout: bodyRead, BookIdle: bookIdle, AllowPrivateTargets: allowPrivate,
		OAuthAccessTTL: accessTTL, OAuthRefreshTTL: refreshTTL,
		MaxUploadBytes: *maxUpload, BlobURL: *blobURL, ConversionWorkers: *workers, PageLongEdge: *longEdge, MaxPages: *maxPages,
		RateCollect: *rcol, IngestBacklog: *backlog, AnalyticsMemory: *amem, KafkaBrokers: splitList(*kafka), KafkaTopic: *topic,
		TrustGeoHeaders: trustGeo, MCPAllowedOrigins: splitList(*mcpOrigins), MCPPageSize: *mcpPage,
		Webhooks: wh, PProf: obs.pprof, Cluster: cc,
	}}, nil
}

// adminTokenFile is where the generated admin token is kept.
func adminTokenFile(dataDir string) string { return filepath.Join(dataDir, "admin-token") }

// firstKeyFile is where the first start writes the API key it created. The key is never
// printed: stdout of a service is collected into logs, which must not hold credentials.
func firstKeyFile(dataDir string) string { return filepath.Join(dataDir, "first-api-key") }

// writeSecretFile writes a secret to a file only its owner can read (0600, also when the file
// existed with a wider mode).
func writeSecretFile(path, secret string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// shellQuote quotes s for a POSIX shell (single quotes).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// listenAddrFile is where serve writes the address it listens on, for `flipbook admin --data`.
func listenAddrFile(dataDir string) string { return filepath.Join(dataDir, "listen-addr") }

// dialAddr is an address a local client can connect to for a listener's address: an
// unspecified host (":8080", "0.0.0.0", "::") becomes loopback.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// resolveAdminToken returns the configured token, else the stored one, else a new stored one.
func resolveAdminToken(cfg *httpapi.Config) (created bool, err error) {
	if cfg.AdminToken != "" {
		return false, nil
	}
	path := adminTokenFile(cfg.DataDir)
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		cfg.AdminToken = strings.TrimSpace(string(b))
		return false, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return false, err
	}
	cfg.AdminToken = "adm_" + actors.RandomString(40)
	return true, os.WriteFile(path, []byte(cfg.AdminToken+"\n"), 0o600)
}

// serve runs the service until ctx ends. ready, if not nil, receives the bound address.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, ready chan<- string) error {
	f, err := parseServeFlags(args, getenv, stderr)
	if err != nil {
		return err
	}
	arenas, err := mallocArenas(getenv)
	if err != nil {
		return err
	}
	if err := limitMallocArenas(arenas); err != nil {
		return err
	}
	if f.cpuprofile != "" {
		pf, err := os.Create(f.cpuprofile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cfg := f.cfg
	// Request lines are batched (at most httpapi.LogFlushEvery late); other lines go out at once.
	logw := httpapi.NewLogWriter(stderr)
	defer logw.Close()
	cfg.Logger = newLogger(logw.Direct(), f.observe)
	if f.observe.requestLines() {
		cfg.RequestLog = &httpapi.RequestLog{W: logw, Text: f.observe.logFormat == "text"}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	cfg.Addr = ln.Addr().String()
	createdToken, err := resolveAdminToken(&cfg)
	if err != nil {
		ln.Close()
		return err
	}
	svc, err := httpapi.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	svc.LogConverters()
	// `flipbook admin --data DIR` finds this server's address here; removed at a clean stop.
	addrFile := listenAddrFile(cfg.DataDir)
	if err := os.WriteFile(addrFile, []byte(dialAddr(cfg.Addr)+"\n"), 0o644); err != nil {
		cfg.Logger.Warn("cannot record the listen address for flipbook admin", "file", addrFile, "err", err)
	}
	defer os.Remove(addrFile)
	first, err := svc.Bootstrap()
	if err != nil {
		ln.Close()
		_ = svc.Shutdown(context.Background())
		return err
	}
	base := "http://" + cfg.Addr
	fmt.Fprintf(stdout, "flipbook %s listening on %s (data in %s)\n", httpapi.Version, base, cfg.DataDir)
	if first != nil {
		path := firstKeyFile(cfg.DataDir)
		if err := writeSecretFile(path, first.Key.Secret); err != nil {
			// The key exists but nobody can read it: say so, and how to get another one.
			cfg.Logger.Error("cannot write the first API key; create one with `flipbook admin keys create`",
				"file", path, "err", err)
		} else {
			fmt.Fprintf(stdout, "\nFirst start: created workspace %q (id %d, %s plan) and a test-mode API key with every scope.\n",
				first.Workspace.Name, first.Workspace.ID, first.Workspace.Plan)
			fmt.Fprintf(stdout, "API key written to %s (mode 0600; it is not printed, so it stays out of logs:\n"+
				"copy it somewhere safe, then delete the file).\n\n", path)
			k := "$(cat " + shellQuote(path) + ")"
			fmt.Fprintf(stdout, "Try it:\n  curl -H \"Authorization: Bearer %s\" %s/api/v1/me\n", k, base)
			fmt.Fprintf(stdout, "  curl -H \"Authorization: Bearer %s\" '%s/api/v1/books?limit=10'\n\n", k, base)
		}
	}
	if createdToken {
		fmt.Fprintf(stdout, "Admin token written to %s (used by `flipbook admin`).\n", adminTokenFile(cfg.DataDir))
	}
	if err := serveMetricsListener(svc, f.observe, cfg.Logger, stdout); err != nil {
		ln.Close()
		_ = svc.Shutdown(context.Background())
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- svc.Serve(ln) }()
	if ready != nil {
		ready <- cfg.Addr
	}
	select {
	case err = <-errc:
		_ = svc.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), f.shutdown)
	defer cancel()
	if err := svc.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if err := <-errc; err != nil {
		return err
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
