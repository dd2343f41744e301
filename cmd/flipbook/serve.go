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
	"strings"
	"time"

	"flipbook/actors"
	"flipbook/httpapi"
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
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	r := &serveFlagSet{fs: fs, getenv: getenv, envErrs: map[string]error{}}
	var raw rawServeFlags
	raw.register(r)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	fs.Visit(func(f *flag.Flag) { delete(r.envErrs, f.Name) })
	for _, err := range r.envErrs {
		return nil, err
	}
	return raw.check()
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
	// writeSecretFile: an empty file already there (mode 0644, say) is made 0600 before the
	// token goes in (found by a review: os.WriteFile keeps an existing file's mode).
	return true, writeSecretFile(path, cfg.AdminToken)
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
		stop, err := startCPUProfile(f.cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
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
	printStartup(stdout, &cfg, first, createdToken)
	if err := serveMetricsListener(svc, f.observe, cfg.Logger, stdout); err != nil {
		ln.Close()
		_ = svc.Shutdown(context.Background())
		return err
	}
	return runService(ctx, svc, ln, cfg.Addr, f.shutdown, stdout, ready)
}

// startCPUProfile starts writing a CPU profile to path; stop stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		pf.Close()
	}, nil
}

// printStartup tells where the service listens and, at the first start, where the first API
// key and the admin token were written.
func printStartup(stdout io.Writer, cfg *httpapi.Config, first *httpapi.FirstStart, createdToken bool) {
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
}

// runService serves on ln until the server fails or ctx ends, then shuts down, giving
// in-flight requests up to shutdown. ready, if not nil, receives addr once serving.
func runService(ctx context.Context, svc *httpapi.Service, ln net.Listener, addr string, shutdown time.Duration,
	stdout io.Writer, ready chan<- string) error {
	errc := make(chan error, 1)
	go func() { errc <- svc.Serve(ln) }()
	if ready != nil {
		ready <- addr
	}
	select {
	case err := <-errc:
		_ = svc.Shutdown(context.Background())
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stdout, "shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
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
