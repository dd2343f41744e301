package bench

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"flipbook/httpapi"
)

// serveEnv makes the test binary act as `flipbook serve` when a scenario starts it as its child
// process (startChild runs os.Executable() with "serve ..."): the scenarios that need a
// service of their own process can then run under `go test` without building the command.
const serveEnv = "FLIPBOOK_BENCH_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "serve" {
		if err := testServe(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServe is the part of `flipbook serve` the scenarios rely on: the flags startChild and
// the scenarios pass, the first-start key and the address printed on stdout, shutdown on
// SIGTERM.
func testServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	cfg := httpapi.DefaultConfig()
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:0", "")
	fs.StringVar(&cfg.DataDir, "data", "", "")
	fs.StringVar(&cfg.AdminToken, "admin-token", "", "")
	fs.IntVar(&cfg.RateWorkspace, "rate-limit-workspace", 0, "")
	fs.IntVar(&cfg.RateEndpoint, "rate-limit-endpoint", 0, "")
	fs.IntVar(&cfg.RateUnauthenticated, "rate-limit-unauthenticated", 0, "")
	fs.IntVar(&cfg.RateCollect, "rate-limit-collect", 0, "")
	fs.IntVar(&cfg.PageLongEdge, "page-long-edge", 1600, "")
	fs.BoolVar(&cfg.AllowPrivateTargets, "allow-private-targets", false, "")
	fs.BoolVar(&cfg.NoPageText, "no-page-text", false, "")
	fs.BoolVar(&cfg.NoRenditions, "no-renditions", false, "")
	fs.DurationVar(&cfg.Webhooks.Timeout, "webhook-timeout", 0, "")
	fs.IntVar(&cfg.MaxBodyBytes, "max-body-bytes", 0, "")
	logLevel := fs.String("log-level", "info", "")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	cfg.Addr = ln.Addr().String()
	svc, err := httpapi.New(cfg)
	if err != nil {
		return err
	}
	first, err := svc.Bootstrap()
	if err != nil {
		return err
	}
	go svc.Serve(ln)
	fmt.Printf("flipbook (test) listening on http://%s\n", cfg.Addr)
	if first != nil {
		// As serve does: the key goes to a file, its path to stdout (startChild reads it).
		kf := filepath.Join(cfg.DataDir, "first-api-key")
		if err := os.WriteFile(kf, []byte(first.Key.Secret+"\n"), 0o600); err != nil {
			return err
		}
		fmt.Printf("API key written to %s (mode 0600)\n", kf)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return svc.Shutdown(sctx)
}

// asChild makes the scenarios' child processes in this test run the test binary as the service.
func asChild(t *testing.T) {
	t.Setenv(serveEnv, "1")
}
