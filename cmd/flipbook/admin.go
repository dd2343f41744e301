package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"flipbook/httpapi"
)

const adminUsage = `usage: flipbook admin [--data DIR] [--addr HOST:PORT | --url URL] [--admin-token TOKEN] <command> [flags]

commands:
  workspaces create --name NAME --plan free|pro|company|enterprise
  workspaces set-plan --id ID --plan PLAN
  keys create --workspace ID --scopes 'books:read,books:write' | '*' [--name NAME] [--mode live|test]
  keys rotate --id ID
  keys revoke --id ID
  oauth-clients WORKSPACE                  the OAuth clients holding grants in the workspace
                                           (and client-credentials clients registered with its keys)
  oauth-grants WORKSPACE                   the workspace's OAuth grants, newest first
  revoke-oauth-client WORKSPACE CLIENT_ID  end every grant of the client in the workspace (a
                                           client-credentials client of the workspace is deleted)
  revoke-oauth-grant WORKSPACE GRANT_ID    end one grant; its tokens are refused from the next request
  cluster status                           cluster mode: this node, the partitions it owns, every
                                           partition's owner (node and URL), the global table's lag

The service is found the way serve is configured: --data (env FLIPBOOK_DATA, default ./data)
holds admin-token and the address the running server listens on (written at start); --addr
(env FLIPBOOK_ADDR) or --url (env FLIPBOOK_URL) name it instead. The token is --admin-token
(env FLIPBOOK_ADMIN_TOKEN), else <data>/admin-token.
`

// adminTarget is where `flipbook admin` sends its calls, and where each part came from (for
// error messages that say which flag to pass).
type adminTarget struct {
	url, urlFrom     string
	token, tokenFrom string
}

// resolveAdminTarget finds the service and the admin token the way serve is configured:
// flags, then FLIPBOOK_* variables, then the data directory (admin-token, and listen-addr,
// which serve writes when it starts), then the defaults.
func resolveAdminTarget(url, addr, token, data string) (adminTarget, error) {
	t := adminTarget{token: token, tokenFrom: "--admin-token / FLIPBOOK_ADMIN_TOKEN"}
	switch {
	case url != "":
		t.url, t.urlFrom = strings.TrimRight(url, "/"), "--url / FLIPBOOK_URL"
	case addr != "":
		t.url, t.urlFrom = "http://"+addr, "--addr / FLIPBOOK_ADDR"
	default:
		if b, err := os.ReadFile(listenAddrFile(data)); err == nil && strings.TrimSpace(string(b)) != "" {
			t.url, t.urlFrom = "http://"+strings.TrimSpace(string(b)), listenAddrFile(data)
		} else {
			t.url, t.urlFrom = "http://"+httpapi.DefaultAddr, "the default address"
		}
	}
	if t.token == "" {
		path := adminTokenFile(data)
		b, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(b)) == "" {
			return t, fmt.Errorf("no admin token: %s does not exist or is empty. Pass --data DIR with the data "+
				"directory `flipbook serve` uses (its --data, env FLIPBOOK_DATA), or --admin-token TOKEN "+
				"(env FLIPBOOK_ADMIN_TOKEN)", path)
		}
		t.token, t.tokenFrom = strings.TrimSpace(string(b)), path
	}
	return t, nil
}

// admin calls the admin API over HTTP and prints its JSON answer.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	defData := getenv("FLIPBOOK_DATA")
	if defData == "" {
		defData = httpapi.DefaultDataDir
	}
	url := fs.String("url", getenv("FLIPBOOK_URL"), "service base URL (env FLIPBOOK_URL)")
	addr := fs.String("addr", getenv("FLIPBOOK_ADDR"), "address the service listens on, as serve's --addr (env FLIPBOOK_ADDR)")
	token := fs.String("admin-token", getenv("FLIPBOOK_ADMIN_TOKEN"), "admin token (env FLIPBOOK_ADMIN_TOKEN)")
	fs.StringVar(token, "token", *token, "same as --admin-token")
	data := fs.String("data", defData, "data directory of the service, holding admin-token (env FLIPBOOK_DATA)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	rest := fs.Args()
	// The OAuth commands take positional arguments: the workspace id, then a client or grant id.
	oauthArgs := map[string]int{"oauth-clients": 1, "oauth-grants": 1, "revoke-oauth-client": 2, "revoke-oauth-grant": 2}
	var method, path string
	if n, ok := oauthArgs[adminFirstArg(rest)]; ok {
		if len(rest) != n+1 {
			fs.Usage()
			return fmt.Errorf("admin %s takes %d argument(s)", rest[0], n)
		}
		ws, err := strconv.ParseInt(rest[1], 10, 64)
		if err != nil || ws < 1 {
			return fmt.Errorf("admin %s: the workspace is its numeric id, not %q", rest[0], rest[1])
		}
		base := fmt.Sprintf("/workspaces/%d/oauth", ws)
		switch rest[0] {
		case "oauth-clients":
			method, path = "GET", base+"/clients"
		case "oauth-grants":
			method, path = "GET", base+"/grants"
		case "revoke-oauth-client": // a client id may be a URL (metadata document): one escaped segment
			method, path = "DELETE", base+"/clients/"+neturl.PathEscape(rest[2])
		case "revoke-oauth-grant":
			method, path = "DELETE", base+"/grants/"+neturl.PathEscape(rest[2])
		}
	} else if len(rest) < 2 {
		fs.Usage()
		return fmt.Errorf("missing admin command")
	}
	target, err := resolveAdminTarget(*url, *addr, *token, *data)
	if err != nil {
		return err
	}
	var body any
	if method == "" {
		if method, path, body, err = adminCall(rest, stderr, fs.Usage); err != nil {
			return err
		}
	}
	return adminDo(ctx, method, target, path, body, stdout)
}

func adminFirstArg(l []string) string {
	if len(l) == 0 {
		return ""
	}
	return l[0]
}

// adminCall is the admin API call of a two-word command (workspaces create, keys revoke, ...).
func adminCall(rest []string, stderr io.Writer, usage func()) (method, path string, body any, err error) {
	sub := flag.NewFlagSet(rest[0]+" "+rest[1], flag.ContinueOnError)
	sub.SetOutput(stderr)
	name := sub.String("name", "", "name")
	plan := sub.String("plan", "", "plan")
	id := sub.Int64("id", 0, "id")
	wsID := sub.Int64("workspace", 0, "workspace id")
	scopes := sub.String("scopes", "", "comma-separated scopes, or *")
	mode := sub.String("mode", "live", "live or test")
	if err := sub.Parse(rest[2:]); err != nil {
		return "", "", nil, err
	}
	switch rest[0] + " " + rest[1] {
	case "workspaces create":
		method, path, body = "POST", "/workspaces", map[string]any{"name": *name, "plan": *plan}
	case "workspaces set-plan":
		method, path, body = "PUT", fmt.Sprintf("/workspaces/%d", *id), map[string]any{"plan": *plan}
	case "keys create":
		list := []string{}
		for _, s := range strings.Split(*scopes, ",") {
			if s = strings.TrimSpace(s); s != "" {
				list = append(list, s)
			}
		}
		method, path = "POST", fmt.Sprintf("/workspaces/%d/keys", *wsID)
		body = map[string]any{"name": *name, "scopes": list, "mode": *mode}
	case "keys rotate":
		method, path = "POST", fmt.Sprintf("/keys/%d/rotate", *id)
	case "keys revoke":
		method, path = "DELETE", fmt.Sprintf("/keys/%d", *id)
	case "cluster status":
		method, path = "GET", "/cluster"
	default:
		usage()
		return "", "", nil, fmt.Errorf("unknown admin command %q", rest[0]+" "+rest[1])
	}
	return method, path, body, nil
}

// adminDo sends one admin API call and prints its JSON answer.
func adminDo(ctx context.Context, method string, t adminTarget, path string, body any, stdout io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, t.url+httpapi.AdminBase+path, rd)
	if err != nil {
		return fmt.Errorf("%w (the service's address is from %s)", err, t.urlFrom)
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return fmt.Errorf("cannot reach the service at %s (address from %s): %w. Is `flipbook serve` running? "+
			"Pass --addr HOST:PORT (serve's --addr, env FLIPBOOK_ADDR) or --data DIR (serve's --data, env FLIPBOOK_DATA)",
			t.url, t.urlFrom, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, out, "", "  ") == nil {
		out = pretty.Bytes()
	}
	fmt.Fprintln(stdout, string(out))
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("the service at %s answered %s to the admin token from %s: it belongs to another data "+
			"directory or server. Pass --data DIR with serve's --data (env FLIPBOOK_DATA), or --admin-token TOKEN",
			t.url, resp.Status, t.tokenFrom)
	case resp.StatusCode >= 300:
		return fmt.Errorf("admin API answered %s", resp.Status)
	}
	return nil
}
