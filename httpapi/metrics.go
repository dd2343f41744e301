package httpapi

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/valyala/fasthttp"
	"github.com/valyala/fasthttp/fasthttpadaptor"

	"flipbook/analytics"
	"flipbook/ingest"
)

// Metrics (docs/OPERATIONS.md lists every one). Each Service has its own registry, so several
// services in one process (tests) never share a series. Request metrics are counted as requests
// finish (observe.go); everything else is read when Prometheus scrapes (serviceCollector):
// atomic counters of the actors and the consumer, the event log's end offsets, Pebble's
// metrics, and DuckDB's memory through one short query. GET /metrics on the main listener needs
// the admin token; --metrics-addr serves it without one on a listener of its own.

// Defaults of the scrape.
const (
	// metricsDuckWait is how long a scrape waits for DuckDB's memory figures before it reports
	// the last ones read (a reattach or a move's commit can hold queries back for seconds).
	metricsDuckWait = time.Second
	// metricsLogWait bounds the event log's end offsets (a round trip to Kafka).
	metricsLogWait = 2 * time.Second
)

// latencyBuckets are the request duration histogram's bounds in seconds: from a cached read
// (well under 1 ms) to a large upload or an export (tens of seconds). 12 bounds: with the +Inf
// bucket, sum and count, 15 series per operation called.
var latencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30}

type metrics struct {
	reg      *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	handler  fasthttp.RequestHandler // the exposition, without authentication
	duck     duckMem
}

func newMetrics(s *Service) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "flipbook_http_requests_total",
		Help: "HTTP requests answered, by operation (operation id, MCP tool or route name) and status code."},
		[]string{"operation", "status"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "flipbook_http_request_duration_seconds",
		Help:    "Time from the request's arrival at the router to the end of its response (streamed bodies included), by operation.",
		Buckets: latencyBuckets}, []string{"operation"})
	m.reg.MustRegister(m.requests, m.latency, &serviceCollector{s: s},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = fasthttpadaptor.NewFastHTTPHandler(promhttp.HandlerFor(m.reg,
		promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, MaxRequestsInFlight: 4}))
	return m
}

// serveMetrics is GET /metrics on the main listener: the admin token is required (401 in the
// API's envelope without it, like the admin API).
func (s *Service) serveMetrics(ctx *fasthttp.RequestCtx) {
	s.adminOnly(s.metrics.handler)(ctx)
}

// adminOnly lets through requests with the admin token (Authorization: Bearer), checked like
// the admin API's (failures count against the per-IP limit of unauthenticated calls).
func (s *Service) adminOnly(h fasthttp.RequestHandler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		if aerr := s.caller.AuthenticateAdmin(bearer(ctx), ctx.RemoteIP().String()); aerr != nil {
			s.writeError(ctx, aerr)
			return
		}
		h(ctx)
	}
}

// ServeMetrics answers GET /metrics without credentials on ln until Shutdown (--metrics-addr:
// a listener meant for a private network, where Prometheus scrapes); anything else is 404.
// Scrapes there are neither logged nor counted in the request metrics.
func (s *Service) ServeMetrics(ln net.Listener) error {
	return s.serveOn(ln, func() *fasthttp.Server {
		if s.metricsSrv == nil {
			s.metricsSrv = &fasthttp.Server{
				Handler: func(ctx *fasthttp.RequestCtx) {
					if string(ctx.Path()) == "/metrics" && (ctx.IsGet() || ctx.IsHead()) {
						s.metrics.handler(ctx)
						return
					}
					ctx.Error("404 page not found: this listener serves GET /metrics only", 404)
				},
				Name:            "flipbook-metrics",
				ReadTimeout:     time.Minute,
				WriteTimeout:    time.Minute,
				IdleTimeout:     2 * time.Minute,
				CloseOnShutdown: true,
				Logger:          fasthttpLogger{s.log},
			}
		}
		return s.metricsSrv
	})
}

var (
	descMailbox = prometheus.NewDesc("flipbook_actor_mailbox_depth",
		"Messages sent to the live actors of a kind and not handled yet (counted: sent minus received).", []string{"kind"}, nil)
	descActors = prometheus.NewDesc("flipbook_actors",
		"Live actors by kind.", []string{"kind"}, nil)
	descAppended = prometheus.NewDesc("flipbook_events_appended_total",
		"Reader events this process appended to the event log.", nil, nil)
	descStored = prometheus.NewDesc("flipbook_events_stored_total",
		"Reader events the analytics consumer stored in DuckDB since the process started (a backlog left by a previous run included).", nil, nil)
	descLogEnd = prometheus.NewDesc("flipbook_event_log_end_offset",
		"The event log's end: the sum over its partitions of the offset after the last durable event.", nil, nil)
	descLogStored = prometheus.NewDesc("flipbook_event_log_stored_offset",
		"What DuckDB holds: the sum over the partitions of the first offset not stored.", nil, nil)
	descLag = prometheus.NewDesc("flipbook_event_log_lag_events",
		"Events durable in the log and not yet stored in DuckDB (not yet visible to analytics).", nil, nil)
	descBodyReserved = prometheus.NewDesc("flipbook_request_body_reserved_bytes",
		"Memory reserved by request bodies being read or held (3 times their buffered size; --max-buffered-bytes bounds it).", nil, nil)
	descBodyRefused = prometheus.NewDesc("flipbook_request_body_budget_refusals_total",
		"Requests answered 503 because request bodies held all of --max-buffered-bytes.", nil, nil)
	descConvQueued = prometheus.NewDesc("flipbook_conversion_queued_batches",
		"Upload batches waiting for a conversion worker.", nil, nil)
	descConvRunning = prometheus.NewDesc("flipbook_conversion_running_batches",
		"Upload batches being converted.", nil, nil)
	descConvPages = prometheus.NewDesc("flipbook_conversion_pages_total",
		"Pages rendered by conversions since the process started (rate() is pages per second).", nil, nil)
	descPebbleCache = prometheus.NewDesc("flipbook_pebble_block_cache_bytes",
		"Bytes held by Pebble's block cache.", nil, nil)
	descPebbleMem = prometheus.NewDesc("flipbook_pebble_memtable_bytes",
		"Bytes allocated by Pebble's memtables (the mutable one and those waiting to be flushed).", nil, nil)
	descDuckMem = prometheus.NewDesc("flipbook_duckdb_memory_bytes",
		"DuckDB's own accounting of the memory it holds (sum of duckdb_memory()); its malloc'd metadata is not in it.", nil, nil)
	descDuckTemp = prometheus.NewDesc("flipbook_duckdb_temporary_storage_bytes",
		"Bytes DuckDB spilled to its temporary files.", nil, nil)
	descClusterOwned = prometheus.NewDesc("flipbook_cluster_partitions_owned",
		"Cluster mode: partitions the group assigned this node.", nil, nil)
	descClusterReady = prometheus.NewDesc("flipbook_cluster_partitions_ready",
		"Cluster mode: partitions this node owns and has taken over (restored).", nil, nil)
	descClusterOwner = prometheus.NewDesc("flipbook_cluster_partition_owner",
		"Cluster mode: 1 for each partition and the node owning it, as this node knows.", []string{"partition", "node"}, nil)
	descClusterGlobalLag = prometheus.NewDesc("flipbook_cluster_global_lag_records",
		"Cluster mode: records of the global topic this node's copy of the global table lacks.", nil, nil)
	descClusterRestoring = prometheus.NewDesc("flipbook_cluster_restore_remaining_records",
		"Cluster mode: changelog records the restores under way have still to apply.", nil, nil)
	descClusterRestored = prometheus.NewDesc("flipbook_cluster_restored_records_total",
		"Cluster mode: changelog records applied by this node's takeovers.", nil, nil)
	descClusterRestoreSeconds = prometheus.NewDesc("flipbook_cluster_restore_seconds_total",
		"Cluster mode: time this node's takeovers took.", nil, nil)
	descClusterStandby = prometheus.NewDesc("flipbook_cluster_standby_applied_records_total",
		"Cluster mode with --cluster-standby: changelog records applied for partitions this node does not own.", nil, nil)
	descClusterForwarded = prometheus.NewDesc("flipbook_cluster_forwarded_requests_total",
		"Cluster mode: requests forwarded to the node owning their workspace.", nil, nil)
	descClusterRefused = prometheus.NewDesc("flipbook_cluster_unavailable_requests_total",
		"Cluster mode: requests answered 503 because their partition had no owner within the wait.", nil, nil)
	descBuild = prometheus.NewDesc("flipbook_build_info",
		"Always 1; the version is a label.", []string{"version"}, nil)
)

// serviceCollector reads the service's figures at scrape time.
type serviceCollector struct{ s *Service }

func (c *serviceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descClusterOwned, descClusterReady, descClusterOwner, descClusterGlobalLag,
		descClusterRestoring, descClusterRestored, descClusterRestoreSeconds, descClusterStandby, descClusterForwarded, descClusterRefused,
		descMailbox, descActors, descAppended, descStored, descLogEnd,
		descLogStored, descLag, descConvQueued, descConvRunning, descConvPages, descPebbleCache, descPebbleMem,
		descDuckMem, descDuckTemp, descBuild, descBodyReserved, descBodyRefused} {
		ch <- d
	}
}

func (c *serviceCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	gauge(descBuild, 1, Version)
	for kind, st := range s.Actors.MailboxDepth() {
		gauge(descMailbox, float64(st.Waiting), kind)
		gauge(descActors, float64(st.Live), kind)
	}
	gauge(descBodyReserved, float64(s.bodies.inUse()))
	counter(descBodyRefused, float64(s.bodies.refused.Load()))
	cs := s.Actors.ConversionStats()
	gauge(descConvQueued, float64(cs.Queued))
	gauge(descConvRunning, float64(cs.Running))
	counter(descConvPages, float64(cs.Pages))

	counter(descAppended, float64(s.appended.Load()))
	if s.consumer != nil {
		counter(descStored, float64(s.consumer.Stats().Events))
		if end, stored, lag, ok := s.eventLogLag(); ok {
			gauge(descLogEnd, float64(end))
			gauge(descLogStored, float64(stored))
			gauge(descLag, float64(lag))
		}
	}
	if c := s.cluster; c != nil {
		h := c.health()
		gauge(descClusterOwned, float64(len(h.Owned)))
		gauge(descClusterReady, float64(len(h.Ready)))
		gauge(descClusterGlobalLag, float64(h.GlobalLag))
		for p, node := range h.Owners {
			gauge(descClusterOwner, 1, p, node)
		}
		remaining := 0.0
		for _, r := range h.Restoring {
			remaining += float64(max(r.To-r.From-r.Applied, 0))
		}
		gauge(descClusterRestoring, remaining)
		records, took := c.node.Restored()
		counter(descClusterRestored, float64(records))
		counter(descClusterRestoreSeconds, took.Seconds())
		counter(descClusterStandby, float64(c.node.StandbyApplied()))
		counter(descClusterForwarded, float64(c.forwarded.Load()))
		counter(descClusterRefused, float64(c.refused.Load()))
	}
	if s.Store != nil {
		pm := s.Store.DB().Metrics()
		gauge(descPebbleCache, float64(pm.BlockCache.Size))
		gauge(descPebbleMem, float64(pm.MemTable.Size))
	}
	if s.Analytics != nil {
		if mem, temp, ok := s.metrics.duck.sample(s.Analytics, metricsDuckWait); ok {
			gauge(descDuckMem, float64(mem))
			gauge(descDuckTemp, float64(temp))
		}
	}
}

// eventLogLag sums the log's end offsets and the consumer's stored offsets over the
// partitions (as GET /admin/v1/ingest does: stored offsets first, so the lag is never
// negative); false when the log does not answer in time.
func (s *Service) eventLogLag() (end, stored, lag uint64, ok bool) {
	eo, isEO := s.events.(ingest.EndOffsets)
	if !isEO {
		return 0, 0, 0, false
	}
	done := s.consumer.Offsets()
	ctx, cancel := context.WithTimeout(context.Background(), metricsLogWait)
	defer cancel()
	ends, err := eo.EndOffsets(ctx)
	if err != nil {
		return 0, 0, 0, false
	}
	for p, e := range ends {
		if s.cluster != nil && !s.cluster.node.IsReady(p) {
			continue // another node's partition: its events are stored there
		}
		var d uint64
		if p < len(done) {
			d = done[p]
		}
		end += e
		stored += d
		lag += e - min(d, e)
	}
	return end, stored, lag, true
}

// duckMem reads DuckDB's memory for scrapes: at most one query at a time, and a scrape waits for
// it at most a given time, reporting the last figures read when it is late (a query's context
// is never cancelled: "DuckDB contexts" in docs/ARCHITECTURE.md).
type duckMem struct {
	mu        sync.Mutex
	running   chan struct{} // closed when the query in flight ends; nil when none runs
	closed    bool
	mem, temp int64
	ok        bool
}

func (d *duckMem) sample(db *analytics.DB, wait time.Duration) (mem, temp int64, ok bool) {
	d.mu.Lock()
	if d.running == nil && !d.closed {
		done := make(chan struct{})
		d.running = done
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // the gate only
			m, t, err := db.MemoryUsage(ctx)
			cancel()
			d.mu.Lock()
			if err == nil {
				d.mem, d.temp, d.ok = m, t, true
			}
			d.running = nil
			d.mu.Unlock()
			close(done)
		}()
	}
	done := d.running
	d.mu.Unlock()
	if done != nil {
		t := time.NewTimer(wait)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mem, d.temp, d.ok
}

// close starts no more queries and waits for the one in flight (before DuckDB is closed).
func (d *duckMem) close() {
	d.mu.Lock()
	d.closed = true
	done := d.running
	d.mu.Unlock()
	if done != nil {
		<-done
	}
}
