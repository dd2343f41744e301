package mcp

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportPathLimits(t *testing.T) {
	t.Parallel()
	for p, ok := range map[string]bool{
		"a.csv": true, "a/b/c.csv": true, "./a//b.csv": true, "1/2/3/4/5/6/7/8.csv": true,
		strings.Repeat("n", 100): true, strings.Repeat("y", 251) + ".csv": false,
		strings.Repeat("a/", 3000) + "x.csv": false, "1/2/3/4/5/6/7/8/9.csv": false,
		strings.Repeat("n", 101): false, "a\x00b": false, "a\nb": false, "../x": false, "/x": false, "a/": false,
	} {
		_, err := exportPath(p, "output_path")
		if (err == nil) != ok {
			t.Errorf("exportPath(%.40q): %v, want ok=%v", p, err, ok)
		}
		if err != nil && (err.Status != 422 || err.Details["output_path"] == nil) {
			t.Errorf("exportPath(%.40q): %+v: a 422 naming the argument", p, err)
		}
	}
}

func TestCheckExistingPath(t *testing.T) {
	t.Parallel()
	area := t.TempDir()
	if err := os.WriteFile(filepath.Join(area, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(area, "d", "sub.csv"), 0o755); err != nil {
		t.Fatal(err)
	}
	for rel, ok := range map[string]bool{"file": true, "new/x.csv": true, "d/x.csv": true,
		"file/x.csv": false, "d/sub.csv": false, "d/sub.csv/x.csv": true, "d/file": true} {
		err := checkExistingPath(area, rel, "output_path")
		if (err == nil) != ok {
			t.Errorf("checkExistingPath(%s): %v, want ok=%v", rel, err, ok)
		}
		if err != nil && strings.Contains(err.Message+strings.Join(err.Details["output_path"], ""), area) {
			t.Errorf("checkExistingPath(%s) names the server path: %v", rel, err.Details)
		}
	}
}

// TestMkdirsCleanup: the directories made for an export are removed when it fails, those that
// were there (or hold a file meanwhile) are not.
func TestMkdirsCleanup(t *testing.T) {
	t.Parallel()
	area := t.TempDir()
	if err := os.MkdirAll(filepath.Join(area, "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	made, err := mkdirs(area, filepath.Join(area, "old", "a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 3 || made[0] != filepath.Join(area, "old", "a", "b", "c") || made[2] != filepath.Join(area, "old", "a") {
		t.Fatalf("made %v", made)
	}
	removeEmpty(made)
	if _, err := os.Stat(filepath.Join(area, "old", "a")); !os.IsNotExist(err) {
		t.Errorf("old/a is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(area, "old")); err != nil {
		t.Errorf("old was there before: %v", err)
	}
	made, err = mkdirs(area, filepath.Join(area, "n", "m"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(area, "n", "other.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removeEmpty(made)
	if _, err := os.Stat(filepath.Join(area, "n", "m")); !os.IsNotExist(err) {
		t.Errorf("n/m is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(area, "n", "other.csv")); err != nil {
		t.Errorf("a directory holding another file stays: %v", err)
	}
	// A file on the way: mkdirs fails.
	if err := os.WriteFile(filepath.Join(area, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := mkdirs(area, filepath.Join(area, "f", "z")); err == nil {
		t.Fatal("a directory under a file")
	}
}
