// Command flipbook is the flipbook service: `flipbook serve` runs it, `flipbook admin` provisions
// workspaces and API keys over the admin API, `flipbook bench` runs the benchmark scenarios.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "flipbook:", err)
		os.Exit(1)
	}
}

const usage = `usage: flipbook <command> [flags]

commands:
  serve   run the service (flipbook serve -h for flags)
  admin   provision workspaces and API keys over the admin API (flipbook admin -h)
  bench   run benchmark scenarios (flipbook bench -h)
`

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("missing command")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], getenv, stdout, stderr, nil)
	case "admin":
		return admin(ctx, args[1:], getenv, stdout, stderr)
	case "bench":
		return bench(ctx, args[1:], getenv, stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
