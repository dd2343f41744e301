package main

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"flipbook/httpapi"
)

// Operability flags of serve (docs/OPERATIONS.md): the log's level and format, the metrics
// listener and pprof.
type observeFlags struct {
	logLevel    slog.Level
	logFormat   string // json or text
	metricsAddr string // "" = no metrics listener
	pprof       bool
}

// boolString is a flag that may be given alone (--pprof) or with a value (--pprof=false), its
// default read from the environment; its value is checked after parsing.
type boolString struct{ s string }

func (b *boolString) String() string {
	if b == nil {
		return ""
	}
	return b.s
}
func (b *boolString) Set(v string) error { b.s = v; return nil }
func (b *boolString) IsBoolFlag() bool   { return true }

// boolVar declares a boolean flag whose default is FLIPBOOK_<NAME> (else false).
func boolVar(fs *flag.FlagSet, getenv func(string) string, name, help string) *boolString {
	b := &boolString{s: "false"}
	if v := getenv(envName(name)); v != "" {
		b.s = v
	}
	fs.Var(b, name, help+" (env "+envName(name)+")")
	return b
}

// parseObserveFlags checks the values of --log-level, --log-format, --metrics-addr and --pprof.
func parseObserveFlags(level, format, metricsAddr, pprofOn string) (observeFlags, error) {
	o := observeFlags{logFormat: strings.ToLower(format), metricsAddr: metricsAddr}
	if err := o.logLevel.UnmarshalText([]byte(level)); err != nil || !validLevel(level) {
		return o, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	if o.logFormat != "json" && o.logFormat != "text" {
		return o, fmt.Errorf("--log-format: %q is not json or text", format)
	}
	if metricsAddr != "" {
		if _, _, err := net.SplitHostPort(metricsAddr); err != nil {
			return o, fmt.Errorf("--metrics-addr: %w", err)
		}
	}
	var err error
	if o.pprof, err = strconv.ParseBool(pprofOn); err != nil {
		return o, fmt.Errorf("--pprof: %w", err)
	}
	return o, nil
}

// validLevel accepts the four names only (slog would also take "info+2" and the like).
func validLevel(s string) bool {
	switch strings.ToLower(s) {
	case "debug", "info", "warn", "error":
		return true
	}
	return false
}

// newLogger is the service's logger: JSON (one object a line) or text, at the level given.
// Request lines are info: warn turns them off.
func newLogger(w io.Writer, o observeFlags) *slog.Logger {
	opts := &slog.HandlerOptions{Level: o.logLevel}
	if o.logFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// serveMetricsListener starts the --metrics-addr listener (GET /metrics without a token), if
// configured; it stops with the service.
func serveMetricsListener(svc *httpapi.Service, o observeFlags, log *slog.Logger, stdout io.Writer) error {
	if o.metricsAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", o.metricsAddr)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	go func() {
		if err := svc.ServeMetrics(ln); err != nil {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	fmt.Fprintf(stdout, "metrics (no token) on http://%s/metrics\n", ln.Addr())
	return nil
}

// requestLines reports whether the level lets request lines (info) through.
func (o observeFlags) requestLines() bool { return o.logLevel <= slog.LevelInfo }
