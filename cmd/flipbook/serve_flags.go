package main

import (
	"errors"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/analytics"
	"flipbook/cluster"
	"flipbook/httpapi"
	"flipbook/mcp"
)

// serveFlagSet registers flags whose defaults come from the environment (envName).
type serveFlagSet struct {
	fs      *flag.FlagSet
	getenv  func(string) string
	envErrs map[string]error // bad env values, reported unless the flag overrides them
}

// str registers a string flag.
func (r *serveFlagSet) str(name, value, help string) *string {
	if v := r.getenv(envName(name)); v != "" {
		value = v
	}
	return r.fs.String(name, value, help+" (env "+envName(name)+")")
}

// num registers an integer flag; an env value that is not an integer is recorded in envErrs.
func (r *serveFlagSet) num(name string, value int, help string) *int {
	if v := r.getenv(envName(name)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			r.envErrs[name] = fmt.Errorf("%s: %q is not an integer", envName(name), v)
		}
		value = n
	}
	return r.fs.Int(name, value, help+" (env "+envName(name)+")")
}

// boolean registers a boolean flag (boolVar).
func (r *serveFlagSet) boolean(name, help string) *boolString {
	return boolVar(r.fs, r.getenv, name, help)
}

// rawServeFlags are the serve flags as given, before their values are checked
// (rawServeFlags.check).
type rawServeFlags struct {
	// HTTP
	addr, public, token, bodyTimeout, grace *string
	maxBody, maxBuffered, maxUpload         *int
	// rate limits
	rws, rep, run, rcol *int
	// storage and the event log
	data, blobURL, amem, kafka, topic, idle *string
	backlog                                 *int
	// conversion
	workers, longEdge, maxPages *int
	noText                      *boolString // --no-page-text
	noRenditions                *boolString // --no-renditions
	ocrLangs                    *string
	// outbound requests and webhooks
	private, geoHdr                  *boolString
	whSchedule, whTimeout, whDisable *string
	// OAuth and MCP
	oauthTTL, oauthRefresh, mcpOrigins *string
	mcpPage                            *int
	// cluster mode
	clusterNode, advertise, clusterWait, clusterSession *string
	clusterParts                                        *int
	clusterStandby                                      *boolString
	// observability
	cpuprofile, logLevel, logFormat, metricsAddr *string
	pprofOn                                      *boolString
}

// register registers every serve flag on r.
func (f *rawServeFlags) register(r *serveFlagSet) {
	def := httpapi.DefaultConfig()
	f.registerHTTP(r, def)
	f.registerRateLimits(r, def)
	f.registerStorage(r, def)
	f.registerConversion(r)
	f.registerOutbound(r)
	f.registerOAuthMCP(r)
	f.registerCluster(r)
	f.registerObservability(r)
}

// registerHTTP registers the listener's, request bodies' and shutdown's flags.
func (f *rawServeFlags) registerHTTP(r *serveFlagSet, def httpapi.Config) {
	f.addr = r.str("addr", def.Addr, "listen address")
	f.public = r.str("public-url", "", "public base URL of preview_url, embed_code and files (default http://<addr>)")
	f.token = r.str("admin-token", "", "admin API token (default: <data>/admin-token, created on first start)")
	f.maxBody = r.num("max-body-bytes", def.MaxBodyBytes, "largest request body accepted")
	f.maxBuffered = r.num("max-buffered-bytes", httpapi.DefaultMaxBufferedBytes, "memory request bodies may hold at once (each counted 3 times its size); past it a request gets 503, -1 = no limit")
	f.bodyTimeout = r.str("body-read-timeout", "30s", "how long a request body may take beyond its length at 256 KiB/s (slower senders are cut with 408)")
	f.maxUpload = r.num("max-upload-bytes", def.MaxUploadBytes, "largest file POST /books accepts")
	f.grace = r.str("shutdown-timeout", "30s", "how long shutdown waits for in-flight requests")
}

// registerRateLimits registers the rate limits' flags.
func (f *rawServeFlags) registerRateLimits(r *serveFlagSet, def httpapi.Config) {
	f.rws = r.num("rate-limit-workspace", def.RateWorkspace, "requests per minute per workspace, 0 = off")
	f.rep = r.num("rate-limit-endpoint", def.RateEndpoint, "requests per minute per workspace and operation, 0 = off")
	f.run = r.num("rate-limit-unauthenticated", def.RateUnauthenticated, "requests per minute per IP without valid credentials (API calls; each of OAuth registration, authorization and client metadata fetches has its own budget of this size), 0 = off")
	f.rcol = r.num("rate-limit-collect", def.RateCollect, "requests per minute per IP to the collector and the email gate, 0 = off")
}

// registerStorage registers the flags of the data directory, blob store, analytics store,
// event log and book actors.
func (f *rawServeFlags) registerStorage(r *serveFlagSet, def httpapi.Config) {
	f.data = r.str("data", def.DataDir, "data directory")
	f.amem = r.str("analytics-memory", analytics.DefaultMemoryLimit, "DuckDB's memory limit for the analytics store (compaction sorts spill beyond it)")
	f.backlog = r.num("ingest-backlog", def.IngestBacklog, "reader events DuckDB may lag behind the event log before collector requests wait for it (at most 2 s), 0 = no limit")
	f.kafka = r.str("kafka-brokers", "", "comma-separated Kafka brokers for the event log (default: the embedded log)")
	f.topic = r.str("kafka-topic", "", "Kafka topic of reader events (default flipbook-events)")
	f.blobURL = r.str("blob-url", "", "keep page images, thumbnails and logos in an S3-compatible store: s3://BUCKET[/PREFIX]?endpoint=http://HOST:PORT&region=REGION, credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (default: <data>/blobs)")
	f.idle = r.str("book-idle", actors.DefaultBookIdle.String(), "how long an idle book actor lives")
}

// registerConversion registers the document conversion's flags.
func (f *rawServeFlags) registerConversion(r *serveFlagSet) {
	f.workers = r.num("conversion-workers", 0, "batches converted at once and renderer processes at once (0 = number of cores)")
	f.longEdge = r.num("page-long-edge", 1600, "page image size: pixels of the longer side")
	f.maxPages = r.num("max-pages", 2000, "most pages of an uploaded PDF or Office document (more: the file fails before rendering)")
	f.noRenditions = r.boolean("no-renditions", "make no WebP renditions of the pages (libvips): the viewer shows every reader the full-size page images")
	f.noText = r.boolean("no-page-text", "keep no page text (no pdftotext, OCR or backfill): page images only, and search, the text layer and the pages without JavaScript have no words")
	f.ocrLangs = r.str("ocr-languages", "eng", "Tesseract languages of OCR, joined by + (eng+deu+fra); each needs its tesseract-ocr-LANG package")
}

// registerOutbound registers the flags of outbound requests (webhooks, template images) and of
// readers' locations.
func (f *rawServeFlags) registerOutbound(r *serveFlagSet) {
	f.private = r.boolean("allow-private-targets", "allow http and private, loopback and link-local addresses for outbound requests (webhook targets, template images): local use and tests only")
	f.whSchedule = r.str("webhook-retry-schedule", "", "delays before each delivery attempt, comma-separated (default 0s,10s,1m,5m,30m,2h,6h,12h)")
	f.whTimeout = r.str("webhook-timeout", actors.DefaultWebhookTimeout.String(), "how long a webhook receiver has to answer")
	f.whDisable = r.str("webhook-disable-after", actors.DefaultWebhookDisableAfter.String(), "a subscription whose deliveries fail this long without a success is deactivated")
	f.geoHdr = r.boolean("trust-geo-headers", "take readers' locations from an edge's visitor-location headers (Cloudflare, CloudFront)")
}

// registerOAuthMCP registers the OAuth tokens' and the MCP endpoint's flags.
func (f *rawServeFlags) registerOAuthMCP(r *serveFlagSet) {
	f.oauthTTL = r.str("oauth-access-ttl", "1h", "how long an OAuth access token lives")
	f.oauthRefresh = r.str("oauth-refresh-ttl", "720h", "how long an OAuth refresh token lives")
	f.mcpOrigins = r.str("mcp-allowed-origins", "", "comma-separated browser origins (https://app.example) allowed to call the MCP endpoint besides the service's own")
	f.mcpPage = r.num("mcp-page-size", mcp.DefaultPageSize, "tools per page of the MCP tools/list answer")
}

// registerCluster registers the cluster mode's flags.
func (f *rawServeFlags) registerCluster(r *serveFlagSet) {
	f.clusterNode = r.str("cluster-node", "", "cluster mode: this node's name, unique in the cluster (needs --kafka-brokers, --advertise-url and the --admin-token every node shares; docs/OPERATIONS.md)")
	f.advertise = r.str("advertise-url", "", "cluster mode: how the other nodes reach this one, http://HOST:PORT")
	f.clusterParts = r.num("cluster-partitions", cluster.DefaultPartitions, "cluster mode: partitions of the workspaces, used when the cluster's topics are first created")
	f.clusterWait = r.str("cluster-wait", httpapi.DefaultClusterWait.String(), "cluster mode: how long a request for a workspace whose partition is moving waits before a 503")
	f.clusterSession = r.str("cluster-session-timeout", cluster.DefaultSessionTimeout.String(), "cluster mode: how long a silent node keeps its partitions")
	f.clusterStandby = r.boolean("cluster-standby", "cluster mode: be a standby replica of the partitions this node does not own (follow their changelog and store their events), so a takeover only catches up")
}

// registerObservability registers the flags of the CPU profile, logs, metrics and pprof.
func (f *rawServeFlags) registerObservability(r *serveFlagSet) {
	f.cpuprofile = r.str("cpuprofile", "", "write a CPU profile of the service to this file, from start to shutdown")
	f.logLevel = r.str("log-level", "info", "log level: debug, info (one line per HTTP request), warn or error")
	f.logFormat = r.str("log-format", "json", "log format: json (one object per line) or text")
	f.metricsAddr = r.str("metrics-addr", "", "also serve GET /metrics without a token on this address, for a private network (default off; /metrics on the main address needs the admin token)")
	f.pprofOn = r.boolean("pprof", "mount net/http/pprof at /debug/pprof/ behind the admin token")
}

// check checks the flags' values, in a fixed order (the first bad one is the error), and makes
// the service's settings of them.
func (f *rawServeFlags) check() (*serveFlags, error) {
	cfg := f.config()
	var err error
	if cfg.BookIdle, err = time.ParseDuration(*f.idle); err != nil {
		return nil, fmt.Errorf("--book-idle: %w", err)
	}
	if cfg.AllowPrivateTargets, err = strconv.ParseBool(f.private.s); err != nil {
		return nil, fmt.Errorf("--allow-private-targets: %w", err)
	}
	if cfg.TrustGeoHeaders, err = strconv.ParseBool(f.geoHdr.s); err != nil {
		return nil, fmt.Errorf("--trust-geo-headers: %w", err)
	}
	if cfg.NoPageText, err = strconv.ParseBool(f.noText.s); err != nil {
		return nil, fmt.Errorf("--no-page-text: %w", err)
	}
	if cfg.NoRenditions, err = strconv.ParseBool(f.noRenditions.s); err != nil {
		return nil, fmt.Errorf("--no-renditions: %w", err)
	}
	if cfg.Webhooks, err = f.webhooks(); err != nil {
		return nil, err
	}
	if cfg.OAuthAccessTTL, err = positiveDuration("oauth-access-ttl", *f.oauthTTL); err != nil {
		return nil, err
	}
	if cfg.OAuthRefreshTTL, err = positiveDuration("oauth-refresh-ttl", *f.oauthRefresh); err != nil {
		return nil, err
	}
	if cfg.BodyReadTimeout, err = positiveDuration("body-read-timeout", *f.bodyTimeout); err != nil {
		return nil, err
	}
	shutdown, err := time.ParseDuration(*f.grace)
	if err != nil {
		return nil, fmt.Errorf("--shutdown-timeout: %w", err)
	}
	if cfg.Cluster, err = f.cluster(); err != nil {
		return nil, err
	}
	obs, err := parseObserveFlags(*f.logLevel, *f.logFormat, *f.metricsAddr, f.pprofOn.s)
	if err != nil {
		return nil, err
	}
	cfg.PProf = obs.pprof
	return &serveFlags{shutdown: shutdown, cpuprofile: *f.cpuprofile, observe: obs, cfg: cfg}, nil
}

// config is the service's settings of the flags taken as they are.
func (f *rawServeFlags) config() httpapi.Config {
	return httpapi.Config{
		// The token trimmed as a presented one is (api.Bearer): a secret mounted from a file
		// ends in a newline, and no request could present it (found by a review).
		Addr: *f.addr, DataDir: *f.data, PublicURL: *f.public, AdminToken: strings.TrimSpace(*f.token),
		RateWorkspace: *f.rws, RateEndpoint: *f.rep, RateUnauthenticated: *f.run,
		MaxBodyBytes: *f.maxBody, MaxBufferedBytes: int64(*f.maxBuffered),
		MaxUploadBytes: *f.maxUpload, BlobURL: *f.blobURL, ConversionWorkers: *f.workers, PageLongEdge: *f.longEdge, MaxPages: *f.maxPages,
		OCRLanguages: *f.ocrLangs,
		RateCollect:  *f.rcol, IngestBacklog: *f.backlog, AnalyticsMemory: *f.amem, KafkaBrokers: splitList(*f.kafka), KafkaTopic: *f.topic,
		MCPAllowedOrigins: splitList(*f.mcpOrigins), MCPPageSize: *f.mcpPage,
	}
}

// webhooks checks --webhook-retry-schedule, --webhook-timeout and --webhook-disable-after.
func (f *rawServeFlags) webhooks() (actors.WebhookOptions, error) {
	var wh actors.WebhookOptions
	if *f.whSchedule != "" {
		for _, v := range splitList(*f.whSchedule) {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 {
				return wh, fmt.Errorf("--webhook-retry-schedule: %q is not a duration", v)
			}
			wh.Schedule = append(wh.Schedule, d)
		}
	}
	var err error
	if wh.Timeout, err = positiveDuration("webhook-timeout", *f.whTimeout); err != nil {
		return wh, err
	}
	if wh.DisableAfter, err = positiveDuration("webhook-disable-after", *f.whDisable); err != nil {
		return wh, err
	}
	return wh, nil
}

// cluster checks the cluster mode's flags: nil without --cluster-node.
func (f *rawServeFlags) cluster() (*httpapi.ClusterConfig, error) {
	if *f.clusterNode == "" {
		return nil, nil
	}
	cc := &httpapi.ClusterConfig{Node: *f.clusterNode, AdvertiseURL: *f.advertise, Partitions: *f.clusterParts}
	var err error
	if cc.Standby, err = strconv.ParseBool(f.clusterStandby.s); err != nil {
		return nil, fmt.Errorf("--cluster-standby: %w", err)
	}
	if cc.Wait, err = positiveDuration("cluster-wait", *f.clusterWait); err != nil {
		return nil, err
	}
	if cc.SessionTimeout, err = positiveDuration("cluster-session-timeout", *f.clusterSession); err != nil {
		return nil, err
	}
	switch {
	case *f.advertise == "":
		return nil, errors.New("--cluster-node needs --advertise-url (how the other nodes reach this one)")
	case *f.kafka == "":
		return nil, errors.New("--cluster-node needs --kafka-brokers")
	case *f.token == "":
		return nil, errors.New("--cluster-node needs --admin-token, the same on every node")
	case *f.blobURL == "":
		return nil, errors.New("--cluster-node needs --blob-url, an S3-compatible store every node reaches")
	case *f.clusterParts < 1 || *f.clusterParts > 1<<15:
		return nil, fmt.Errorf("--cluster-partitions: %d is not between 1 and 32768", *f.clusterParts)
	}
	return cc, nil
}

// positiveDuration parses the value of the flag --name, which must be a positive duration.
func positiveDuration(name, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return d, fmt.Errorf("--%s: %q is not a positive duration", name, v)
	}
	return d, nil
}
