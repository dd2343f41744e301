package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"flipbook/api"
)

// Export tools (spec §4.11): the CSV comes back inline up to Options.InlineCSV bytes; with
// output_path (or output_object_key) it is stored in the workspace's export area,
// <ExportDir>/<workspace>-<mode>/<path>, and the tool returns where it is and how many rows it
// has. A path that would leave the area (absolute, "..", a symlink out) is refused.

// The quota of a workspace's export area: stored exports stay until someone removes them, so a
// workspace calling the tools with new paths grew the disk without bound (found by a review).
// Storing over an existing path is always allowed (it is how a report is refreshed).
const (
	MaxExportFiles = 1000
	MaxExportBytes = 5 << 30
)

// checkQuota refuses a new export when the area holds MaxExportFiles, or MaxExportBytes.
func (s *Server) checkQuota(areaName, rel, keyArg string) (*api.Error, error) {
	usage := s.opts.ExportUsage
	if usage == nil || s.opts.PutExport == nil {
		usage = s.localUsage
	}
	files, bytes, exists, err := usage(areaName, rel)
	if err != nil {
		return nil, err
	}
	switch {
	case !exists && files >= MaxExportFiles:
		return api.FieldError(keyArg, fmt.Sprintf("is a new file, and the workspace's export area holds %d files, the most it keeps: "+
			"store over an existing path, or ask for old exports to be removed", files)), nil
	case bytes >= MaxExportBytes:
		return api.FieldError(keyArg, fmt.Sprintf("cannot be stored: the workspace's export area holds %d bytes, the most it keeps "+
			"(%d): ask for old exports to be removed", bytes, int64(MaxExportBytes))), nil
	}
	return nil, nil
}

// localUsage counts the files under an export area of ExportDir.
func (s *Server) localUsage(areaName, rel string) (files int, bytes int64, exists bool, err error) {
	area := filepath.Join(s.opts.ExportDir, areaName)
	err = filepath.WalkDir(area, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	if _, serr := os.Stat(filepath.Join(area, filepath.FromSlash(rel))); serr == nil {
		exists = true
	}
	return files, bytes, exists, err
}

// errTooBig stops an inline export that outgrew the limit.
var errTooBig = errors.New("export larger than the inline limit")

// Limits of output_path (output_object_key): the whole path, each of its names, and how many
// names it has. A path past them is a 422 before anything touches the file system.
const (
	maxExportPath  = 255
	maxExportName  = 100
	maxExportDepth = 8
)

func (s *Server) export(ctx context.Context, p *api.Principal, args map[string]any, res *api.Result, reqID string) (toolResult, error) {
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
			return toolResult{}, s.internal(reqID, "export", err)
		}
		data["csv"], data["rows"], data["bytes"] = buf.b.String(), cw.rows(), buf.b.Len()
		return exportResult(data), nil
	}
	rel, aerr := exportPath(key, keyArg)
	if aerr != nil {
		return toolError(aerr), nil
	}
	areaName := fmt.Sprintf("%d-%s", p.Tenant.Workspace, p.Tenant.Mode)
	if qerr, err := s.checkQuota(areaName, rel, keyArg); err != nil {
		return toolResult{}, s.internal(reqID, "export area", err)
	} else if qerr != nil {
		return toolError(qerr), nil
	}
	if s.opts.PutExport != nil {
		return s.exportObject(res, data, areaName, rel, keyArg, reqID)
	}
	area := filepath.Join(s.opts.ExportDir, areaName)
	if err := os.MkdirAll(area, 0o755); err != nil {
		return toolResult{}, s.internal(reqID, "export area", err)
	}
	if aerr := checkExistingPath(area, rel, keyArg); aerr != nil {
		return toolError(aerr), nil
	}
	full := filepath.Join(area, filepath.FromSlash(rel))
	created, err := mkdirs(area, filepath.Dir(full))
	if err != nil {
		return toolResult{}, s.internal(reqID, "export directory", err)
	}
	// Directories made for this export go again if it fails (only while empty: another export
	// may have put a file there meanwhile).
	ok := false
	defer func() {
		if !ok {
			removeEmpty(created)
		}
	}()
	// Symlinks inside the area must not lead out of it.
	realArea, err := filepath.EvalSymlinks(area)
	if err != nil {
		return toolResult{}, s.internal(reqID, "export area", err)
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
		return toolResult{}, s.internal(reqID, "export file", err)
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
	target := filepath.Join(realDir, filepath.Base(full))
	if err == nil {
		err = os.Rename(tmp.Name(), target)
	}
	if err != nil {
		return toolResult{}, s.internal(reqID, "export file", err)
	}
	ok = true
	return s.stored(data, cw.rows(), n, areaName, rel, keyArg), nil
}

// stored is the answer of an export stored at rel of the area: where it is and its size. The
// location is relative to the service's data directory (exports/<area>/<path>; with an object
// store, the object's key under its prefix): an answer never names the server's own file system
// (issue 25).
func (s *Server) stored(data map[string]any, rows int, n int64, areaName, rel, keyArg string) toolResult {
	data["rows"], data["bytes"], data["location"] = rows, n, path.Join(filepath.Base(s.opts.ExportDir), areaName, rel)
	if keyArg == "output_object_key" {
		data["object_key"] = rel
	} else {
		data["path"] = rel
	}
	return exportResult(data)
}

// exportObject stores an export in the object store (Options.PutExport): written to a temporary
// file first (rows and bytes counted), then moved to "<area>/<path>". Object keys have no
// directories to escape through: exportPath's checks (relative, no "..", bounded names) suffice.
func (s *Server) exportObject(res *api.Result, data map[string]any, areaName, rel, keyArg, reqID string) (toolResult, error) {
	tmp, err := os.CreateTemp("", "flipbook-export-*")
	if err != nil {
		return toolResult{}, s.internal(reqID, "export file", err)
	}
	defer os.Remove(tmp.Name())
	cw := &rowCounter{w: tmp}
	n, err := res.Stream.WriteTo(cw)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.opts.PutExport(areaName+"/"+rel, tmp.Name())
	}
	if err != nil {
		return toolResult{}, s.internal(reqID, "export object", err)
	}
	return s.stored(data, cw.rows(), n, areaName, rel, keyArg), nil
}

// internal logs a failure of an export with the request id and is the tool call's -32603
// (a 5xx of the operation, docs/DECISIONS.md): its message is the service's 500 message, never
// the cause (it names files on the server).
func (s *Server) internal(reqID, what string, err error) error {
	s.log.Error("mcp export: "+what, "request_id", reqID, "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: api.ErrInternal().Message}
}

// exportPath cleans a relative path of the export area; anything that would leave it, or is
// past the limits of a path, is a validation error.
func exportPath(p, arg string) (string, *api.Error) {
	if len(p) > maxExportPath {
		return "", api.FieldError(arg, fmt.Sprintf("must be at most %d bytes long", maxExportPath))
	}
	p = strings.ReplaceAll(p, "\\", "/")
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return "", api.FieldError(arg, "must not contain control characters")
		}
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
	names := strings.Split(clean, "/")
	if len(names) > maxExportDepth {
		return "", api.FieldError(arg, fmt.Sprintf("must have at most %d names (directories and the file)", maxExportDepth))
	}
	for _, name := range names {
		if len(name) > maxExportName {
			return "", api.FieldError(arg, fmt.Sprintf("must have names of at most %d bytes each", maxExportName))
		}
	}
	return clean, nil
}

// checkExistingPath refuses a path whose existing names are not what it uses them as: a
// directory on the way that is a file, or a file name that is a directory. Names are reported
// relative to the export area.
func checkExistingPath(area, rel, arg string) *api.Error {
	names := strings.Split(rel, "/")
	dir := area
	for i, name := range names {
		dir = filepath.Join(dir, name)
		fi, err := os.Stat(dir)
		if err != nil {
			return nil // missing: made (a directory) or written (the file) by the export
		}
		last := i == len(names)-1
		if !last && !fi.IsDir() {
			return api.FieldError(arg, fmt.Sprintf("%s is a file, not a directory", strings.Join(names[:i+1], "/")))
		}
		if last && fi.IsDir() {
			return api.FieldError(arg, fmt.Sprintf("%s is a directory, not a file", rel))
		}
	}
	return nil
}

// mkdirs makes dir and its missing parents below area, and returns the ones it made, deepest
// first.
func mkdirs(area, dir string) ([]string, error) {
	var missing []string
	for d := dir; d != area && within(area, d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append(missing, d)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		removeEmpty(missing)
		return nil, err
	}
	return missing, nil
}

// removeEmpty removes directories, deepest first, while they are empty.
func removeEmpty(dirs []string) {
	for _, d := range dirs {
		if os.Remove(d) != nil {
			return
		}
	}
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
