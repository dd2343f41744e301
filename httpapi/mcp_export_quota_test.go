package httpapi

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flipbook/mcp"
)

// A workspace's export area keeps at most mcp.MaxExportFiles files: a new path past them is a
// 422 naming the argument, storing over an existing one still works (found by a review: the
// area grew without bound, one file per call).
func TestMCPExportAreaQuota(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	key, ws := h.workspaceKey(t, "company", "live", "*")
	book := h.konva(t, key, "Quota", "publish")
	area := filepath.Join(h.cfg.DataDir, "exports", fmt.Sprintf("%d-live", ws))
	require.NoError(t, os.MkdirAll(filepath.Join(area, "old"), 0o755))
	for i := 0; i < mcp.MaxExportFiles; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(area, "old", fmt.Sprintf("r%04d.csv", i)), []byte("id\n"), 0o644))
	}
	export := func(path string) map[string]any {
		r := h.rpc(t, key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"exports_download_book_leads_csv",`+
			`"arguments":{"book_id":"`+book+`","output_path":"`+path+`"}}}`)
		require.Equal(t, 200, r.Status, "%s", r.Body)
		return r.JSON["result"].(map[string]any)
	}
	res := export("new.csv")
	require.Equal(t, true, res["isError"], "%v", res)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	require.Contains(t, text, "output_path")
	require.Contains(t, text, "1000 files")
	_, err := os.Stat(filepath.Join(area, "new.csv"))
	require.True(t, os.IsNotExist(err), "nothing stored")

	res = export("old/r0007.csv") // over an existing file: allowed
	require.NotEqual(t, true, res["isError"], "%v", res)
	data, err := os.ReadFile(filepath.Join(area, "old", "r0007.csv"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(data), "id,book_id,"), "%s", data)
}
