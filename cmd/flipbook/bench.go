package main

import (
	"context"
	"io"

	benchpkg "flipbook/bench"
)

func bench(ctx context.Context, args []string, _ func(string) string, stdout, stderr io.Writer) error {
	return benchpkg.Main(ctx, args, stdout, stderr)
}
