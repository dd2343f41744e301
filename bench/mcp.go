package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"

	"github.com/valyala/fasthttp"

	"flipbook/httpapi"
	"flipbook/mcp"
)

// MCPOptions configure the mcp scenario.
type MCPOptions struct {
	Books            int // books in the workspace
	Conns            int
	Warmup, Duration time.Duration
	// SDKOnly measures with the tools/call fast path off (every call through the go-sdk's
	// handler), the measurement behind docs/DECISIONS.md "MCP transport".
	SDKOnly bool
	// Rounds is how many pairs of rounds (default 10) each protocol version is measured in,
	// alternating with REST: each side gets Duration in all, Duration/Rounds a round.
	Rounds int
}

// TargetMCPVsREST is the least share of REST's req/s that tools/call books_get must reach
// (issue 27; 0.7 before), on the median of the alternating rounds.
const TargetMCPVsREST = 0.85

// MCP measures tools/call books_get on the MCP endpoint beside REST GET /books/{book} on the
// same workspace in the same run: under the 2025-11-25 revision (after the initialize
// handshake, which the stateless endpoint does not need again) and under 2026-07-28 (the
// per-request protocol version in _meta and the Mcp-Method header).
func MCP(ctx context.Context, opts MCPOptions, out io.Writer) (*Report, error) {
	dir, err := os.MkdirTemp("", "flipbook-bench-mcp-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	svc, cfg, err := startService(dir, func(c *httpapi.Config) { c.MCPSDKOnly = opts.SDKOnly })
	if err != nil {
		return nil, err
	}
	defer svc.Shutdown(context.Background())

	key, _, ids, err := seedWorkspace(svc, "bench-mcp", opts.Books)
	if err != nil {
		return nil, err
	}
	if err := svc.Store.Settle(); err != nil {
		return nil, err
	}
	// Each worker calls with its own pre-encoded bodies (the client's encoding is not what is
	// measured).
	bodies := func(version string) [][]byte {
		out := make([][]byte, len(ids))
		for i, id := range ids {
			params := map[string]any{"name": "books_get", "arguments": map[string]any{"book_id": id}}
			if version == "2026-07-28" {
				params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": version,
					"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1"},
					"io.modelcontextprotocol/clientCapabilities": map[string]any{}}
			}
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": params})
			out[i] = b
		}
		return out
	}
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = 10
	}
	// Each version alternates with REST in short rounds (bench/alternate.go): the ratio is of
	// two loads that saw the same machine.
	load := func(req func(w, n int, r *fasthttp.Request), check func(*fasthttp.Response) error) func() Stats {
		return func() Stats {
			return Load{Addr: cfg.Addr, Conns: opts.Conns, Warmup: opts.Warmup / time.Duration(rounds),
				Duration: opts.Duration / time.Duration(rounds), Request: req, Check: check}.Run(ctx)
		}
	}
	rep := &Report{Scenario: "mcp"}
	authValue, paths := "Bearer "+key, bookPaths(ids)
	rest := load(func(w, n int, r *fasthttp.Request) {
		r.SetRequestURI(paths[rand.IntN(len(paths))])
		r.Header.Set("Authorization", authValue)
	}, status200)
	results := map[string]alternated{}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		bs := bodies(version)
		call := load(func(w, n int, r *fasthttp.Request) {
			r.Header.SetMethod("POST")
			r.SetRequestURI(mcp.Path)
			r.Header.Set("Authorization", authValue)
			r.Header.SetContentType("application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			r.Header.Set("MCP-Protocol-Version", version)
			if version == "2026-07-28" {
				r.Header.Set("Mcp-Method", "tools/call")
				r.Header.Set("Mcp-Name", "books_get")
			}
			r.SetBody(bs[rand.IntN(len(bs))])
		}, toolResultOK)
		fmt.Fprintf(out, "  %s: %d rounds of REST GET and tools/call, alternating\n", version, rounds)
		res, err := alternate(rounds, [2]string{"REST", "MCP"}, out, rest, call)
		if err != nil {
			return nil, fmt.Errorf("mcp %s: %w", version, err)
		}
		rep.line(out, fmt.Sprintf("REST GET /books/{book}, beside %s   ", version), res.a)
		rep.line(out, fmt.Sprintf("MCP tools/call books_get (%s)", version), res.b)
		fmt.Fprintln(out, res.summary("MCP / REST ("+version+")"))
		results[version] = res
	}
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		res := results[version]
		rep.check(out, "tools/call books_get req/s vs REST GET ("+version+", median of alternating rounds)", res.median(), ">=", TargetMCPVsREST)
		fmt.Fprintf(out, "  p99 tools/call %s vs REST: %s vs %s\n", version, res.b.P99, res.a.P99)
	}
	return rep, nil
}

// toolResultOK accepts a JSON-RPC result that is not a tool error. It looks at bytes only, as
// the REST check looks at the status only: the load generator shares the machine's two cores,
// and decoding every 4 KB answer would take CPU from the service being measured.
func toolResultOK(resp *fasthttp.Response) error {
	b := resp.Body()
	if resp.StatusCode() != 200 || !bytes.HasPrefix(b, []byte(`{"jsonrpc":"2.0"`)) ||
		!bytes.Contains(b, []byte(`"result":{`)) || bytes.Contains(b, []byte(`"isError":true`)) {
		return fmt.Errorf("not a tool result: status %d: %.200s", resp.StatusCode(), b)
	}
	return nil
}
