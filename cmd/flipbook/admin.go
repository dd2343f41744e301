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

const adminUsage = `usage: flipbook admin [--url URL] [--token TOKEN] [--data DIR] <command> [flags]

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

The token defaults to $FLIPBOOK_ADMIN_TOKEN, else the file <data>/admin-token.
`

// admin calls the admin API over HTTP and prints its JSON answer.
func admin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, adminUsage) }
	defURL := getenv("FLIPBOOK_URL")
	if defURL == "" {
		defURL = "http://" + httpapi.DefaultAddr
	}
	defData := getenv("FLIPBOOK_DATA")
	if defData == "" {
		defData = httpapi.DefaultDataDir
	}
	url := fs.String("url", defURL, "service base URL (env FLIPBOOK_URL)")
	token := fs.String("token", getenv("FLIPBOOK_ADMIN_TOKEN"), "admin token (env FLIPBOOK_ADMIN_TOKEN)")
	data := fs.String("data", defData, "data directory holding admin-token (env FLIPBOOK_DATA)")
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
	if *token == "" {
		b, err := os.ReadFile(adminTokenFile(*data))
		if err != nil {
			return fmt.Errorf("no admin token: pass --token, set FLIPBOOK_ADMIN_TOKEN or run from the folder whose data dir holds admin-token (%w)", err)
		}
		*token = strings.TrimSpace(string(b))
	}
	var body any
	if method == "" {
		var err error
		if method, path, body, err = adminCall(rest, stderr, fs.Usage); err != nil {
			return err
		}
	}
	return adminDo(ctx, method, strings.TrimRight(*url, "/")+httpapi.AdminBase+path, *token, body, stdout)
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
	default:
		usage()
		return "", "", nil, fmt.Errorf("unknown admin command %q", rest[0]+" "+rest[1])
	}
	return method, path, body, nil
}

// adminDo sends one admin API call and prints its JSON answer.
func adminDo(ctx context.Context, method, url, token string, body any, stdout io.Writer) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return err
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
	if resp.StatusCode >= 300 {
		return fmt.Errorf("admin API answered %s", resp.Status)
	}
	return nil
}
