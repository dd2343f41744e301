package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"flipbook/api"
)

// Export tools (spec §4.11): the CSV comes back inline up to Options.InlineCSV bytes; with
// output_path (or output_object_key) it is stored in the workspace's export area,
// <ExportDir>/<workspace>-<mode>/<path>, and the tool returns where it is and how many rows it
// has. A path that would leave the area (absolute, "..", a symlink out) is refused.

// errTooBig stops an inline export that outgrew the limit.
var errTooBig = errors.New("export larger than the inline limit")

func (s *Server) export(ctx context.Context, p *api.Principal, args map[string]any, res *api.Result) (toolResult, error) {
	defer res.Stream.Close()
	key, keyArg := "", ""
	for _, name := range []string{"output_path", "output_object_key"} {
		if v, _ := args[name].(string); v != "" {
			key, keyArg = v, name
			break
		}
	}
	data := map[string]any{"format": "csv", "filename": res.Filename}
	if key == "" {
		buf := &limitedBuffer{max: s.opts.InlineCSV}
		cw := &rowCounter{w: buf}
		if _, err := res.Stream.WriteTo(cw); err != nil {
			if errors.Is(err, errTooBig) {
				return toolError(&api.Error{Status: 413, Type: api.TypePayloadTooLarge,
					Message: fmt.Sprintf("the CSV is larger than %d bytes, the most returned inline: pass output_path to store it in the workspace's export area", s.opts.InlineCSV)}), nil
			}
			return toolResult{}, fmt.Errorf("export: %w", err)
		}
		data["csv"], data["rows"], data["bytes"] = buf.b.String(), cw.rows(), buf.b.Len()
		return exportResult(data), nil
	}
	area := filepath.Join(s.opts.ExportDir, fmt.Sprintf("%d-%s", p.Tenant.Workspace, p.Tenant.Mode))
	rel, aerr := exportPath(key, keyArg)
	if aerr != nil {
		return toolError(aerr), nil
	}
	full := filepath.Join(area, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return toolResult{}, fmt.Errorf("export area: %w", err)
	}
	// Symlinks inside the area must not lead out of it.
	realArea, err := filepath.EvalSymlinks(area)
	if err != nil {
		return toolResult{}, fmt.Errorf("export area: %w", err)
	}
	realDir, err := filepath.EvalSymlinks(filepath.Dir(full))
	if err != nil || !within(realArea, realDir) {
		return toolError(api.FieldError(keyArg, "must stay inside the workspace's export area")), nil
	}
	if fi, err := os.Lstat(full); err == nil && fi.Mode()&os.ModeSymlink != 0 {
		return toolError(api.FieldError(keyArg, "must stay inside the workspace's export area")), nil
	}
	tmp, err := os.CreateTemp(realDir, ".export-*")
	if err != nil {
		return toolResult{}, fmt.Errorf("export file: %w", err)
	}
	defer os.Remove(tmp.Name())
	cw := &rowCounter{w: tmp}
	n, err := res.Stream.WriteTo(cw)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(realDir, filepath.Base(full)))
	}
	if err != nil {
		return toolResult{}, fmt.Errorf("export file: %w", err)
	}
	data["rows"], data["bytes"], data["location"] = cw.rows(), n, filepath.Join(realDir, filepath.Base(full))
	if keyArg == "output_object_key" {
		data["object_key"] = rel
	} else {
		data["path"] = rel
	}
	return exportResult(data), nil
}

// exportPath cleans a relative path of the export area; anything that would leave it is a
// validation error.
func exportPath(p, arg string) (string, *api.Error) {
	p = strings.ReplaceAll(p, "\\", "/")
	if strings.ContainsRune(p, 0) {
		return "", api.FieldError(arg, "must not contain NUL")
	}
	if strings.HasPrefix(p, "/") || filepath.IsAbs(p) {
		return "", api.FieldError(arg, "must be a path relative to the workspace's export area")
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == ".." {
			return "", api.FieldError(arg, "must not contain .. (it would leave the workspace's export area)")
		}
	}
	clean := path.Clean(p)
	if clean == "." || strings.HasSuffix(p, "/") {
		return "", api.FieldError(arg, "must name a file")
	}
	return clean, nil
}

func within(root, dir string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func exportResult(data map[string]any) toolResult {
	body, _ := json.Marshal(map[string]any{"data": data})
	return toolResult{json: body}
}

// limitedBuffer fails a write past max bytes.
type limitedBuffer struct {
	b   bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if l.b.Len()+len(p) > l.max {
		return 0, errTooBig
	}
	return l.b.Write(p)
}

// rowCounter counts CSV records (line ends outside quoted fields) as they pass.
type rowCounter struct {
	w      io.Writer
	lines  int
	quoted bool
}

func (c *rowCounter) Write(p []byte) (int, error) {
	for _, b := range p {
		switch b {
		case '"':
			c.quoted = !c.quoted
		case '\n':
			if !c.quoted {
				c.lines++
			}
		}
	}
	return c.w.Write(p)
}

// rows is the records written, the header not counted.
func (c *rowCounter) rows() int { return max(0, c.lines-1) }
