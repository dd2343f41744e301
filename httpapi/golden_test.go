package httpapi

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Golden files live under testdata/. Rewrite them with
//
//	go test -tags pebblegozstd,duckdb_arrow -run TestX ./httpapi/ -update
//
// and review the diff.
var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/")

// checkGolden compares got with testdata/<name> (or writes it with -update).
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", filepath.FromSlash(name))
	if *updateGolden {
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file %s: run with -update", path)
	require.Equal(t, string(want), string(got), "golden file %s (run with -update to rewrite, then review the diff)", path)
}
