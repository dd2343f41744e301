// Package lint checks the code as a test (as Pebble's internal/lint does): formatting, go vet,
// staticcheck, the import layering docs/ARCHITECTURE.md declares, and the habits that keep tests
// independent (no fixed sleeps, no package variables changed by tests). `make test` runs it with
// everything else; `make lint` runs it alone.
package lint

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// module is the module path of the project (go.mod).
const module = "flipbook"

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// goFile is one parsed Go source file of the project.
type goFile struct {
	path string // relative to the root
	pkg  string // import path of its directory
	test bool   // a _test.go file
	src  []byte
	ast  *ast.File
	fset *token.FileSet
}

// skipDirs are folders without the project's Go code.
var skipDirs = map[string]bool{".git": true, "bin": true, "data": true, "clients": true, "node_modules": true, "testartifacts": true}

// sources parses every Go file of the project (with comments).
func sources(t *testing.T) []goFile {
	t.Helper()
	top := root(t)
	fset := token.NewFileSet()
	var files []goFile
	err := filepath.WalkDir(top, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != top && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(top, path)
		dir := filepath.ToSlash(filepath.Dir(rel))
		pkg := module
		if dir != "." {
			pkg = module + "/" + dir
		}
		files = append(files, goFile{path: rel, pkg: pkg, test: strings.HasSuffix(path, "_test.go"), src: src, ast: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("only %d Go files found under %s", len(files), top)
	}
	return files
}

// TestGofmt: every file is as gofmt writes it.
func TestGofmt(t *testing.T) {
	t.Parallel()
	for _, f := range sources(t) {
		out, err := format.Source(f.src)
		if err != nil {
			t.Errorf("%s: %v", f.path, err)
			continue
		}
		if !bytes.Equal(out, f.src) {
			t.Errorf("%s is not gofmt-ed (run gofmt -w %s)", f.path, f.path)
		}
	}
}

// goTool runs `go args...` in the repository and fails t with its output if it fails. The
// build tags come from GOFLAGS, as for every go command of the Makefile.
func goTool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = root(t)
	if !strings.Contains(os.Getenv("GOFLAGS"), "-tags=") {
		cmd.Env = append(os.Environ(), "GOFLAGS=-tags=pebblegozstd,duckdb_arrow -buildvcs=false")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestVet: go vet finds nothing.
func TestVet(t *testing.T) {
	if testing.Short() {
		t.Skip("go vet: not in -short")
	}
	t.Parallel()
	goTool(t, "vet", "./...")
}

// TestStaticcheck: staticcheck (a tool of go.mod, checks in staticcheck.conf) finds nothing.
func TestStaticcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("staticcheck: not in -short")
	}
	t.Parallel()
	goTool(t, "tool", "staticcheck", "./...")
}

// layering reads the table of allowed imports from docs/ARCHITECTURE.md: the rows after the
// line holding "<!-- lint: imports -->" up to the next blank line, each
// "| `pkg` | `a`, `b` | `c` |" (or "nothing" for no project package), paths relative to the
// module: what pkg may import, and what its tests may import besides.
func layering(t *testing.T) (prod, tests map[string][]string) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(root(t), "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- lint: imports -->")
	if !ok {
		t.Fatal(`docs/ARCHITECTURE.md has no "<!-- lint: imports -->" table`)
	}
	table, _, _ = strings.Cut(strings.TrimLeft(table, "\n"), "\n\n")
	list := func(cell string) []string {
		var l []string
		for _, a := range strings.Split(cell, ",") {
			if a = strings.Trim(strings.TrimSpace(a), "`"); a != "" && a != "nothing" {
				l = append(l, module+"/"+a)
			}
		}
		return l
	}
	prod, tests = map[string][]string{}, map[string][]string{}
	for _, line := range strings.Split(table, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.Contains(cells[1], "`") {
			continue // the header and its rule
		}
		name := module + "/" + strings.Trim(strings.TrimSpace(cells[1]), "`")
		prod[name], tests[name] = list(cells[2]), list(cells[3])
	}
	if len(prod) < 10 {
		t.Fatalf("the imports table of docs/ARCHITECTURE.md has %d rows", len(prod))
	}
	// Tests may import all the layers below their package (what its imports may import, and so
	// on down), the package itself and testutil.
	var below func(p string, into map[string]bool)
	below = func(p string, into map[string]bool) {
		for _, q := range prod[p] {
			if !into[q] {
				into[q] = true
				below(q, into)
			}
		}
	}
	for p := range prod {
		all := map[string]bool{p: true, module + "/internal/testutil": true}
		below(p, all)
		for _, q := range tests[p] {
			all[q] = true
		}
		tests[p] = slices.Sorted(maps.Keys(all))
	}
	return prod, tests
}

// TestImportLayering: each package imports only the project packages docs/ARCHITECTURE.md
// allows it, and every package has a row there; its tests, what the table allows them.
func TestImportLayering(t *testing.T) {
	t.Parallel()
	rules, testRules := layering(t)
	seen := map[string]bool{}
	for _, f := range sources(t) {
		allowed, ok := rules[f.pkg]
		if !ok {
			if !seen[f.pkg] {
				t.Errorf("package %s has no row in the imports table of docs/ARCHITECTURE.md", f.pkg)
			}
			seen[f.pkg] = true
			continue
		}
		seen[f.pkg] = true
		if f.test {
			allowed = testRules[f.pkg]
		}
		for _, imp := range f.ast.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if p != module && !strings.HasPrefix(p, module+"/") {
				continue
			}
			if slices.Contains(allowed, p) {
				continue
			}
			t.Errorf("%s imports %s: against the layering of docs/ARCHITECTURE.md (%s may import %v)",
				f.path, p, f.pkg, allowed)
		}
	}
	for p := range rules {
		if !seen[p] {
			t.Errorf("docs/ARCHITECTURE.md lists package %s, which has no Go files", p)
		}
	}
}

// TestImportGroups: the project's own imports stand in a group of their own, after the
// standard library and the third-party groups (as goimports -local flipbook would keep them):
// an import of the project among the standard library's hides what a file depends on.
func TestImportGroups(t *testing.T) {
	t.Parallel()
	for _, f := range sources(t) {
		// Groups are runs of import lines without a blank line between them.
		var groups [][]string
		last := -2
		for _, imp := range f.ast.Imports {
			line := f.fset.Position(imp.Pos()).Line
			if line != last+1 {
				groups = append(groups, nil)
			}
			groups[len(groups)-1] = append(groups[len(groups)-1], strings.Trim(imp.Path.Value, `"`))
			last = line
		}
		for _, g := range groups {
			own := 0
			for _, p := range g {
				if p == module || strings.HasPrefix(p, module+"/") {
					own++
				}
			}
			if own > 0 && own < len(g) {
				t.Errorf("%s: the project's imports share a group with others: %v", f.path, g)
			}
		}
	}
}

// TestNoSleepInTests: a test waits for a condition with testutil.Eventually, not a fixed sleep
// (too long on a quiet machine, too short on a loaded one). A sleep that is not waiting for
// anything (pacing a load, letting a timeout pass, a slow server under test) says so on its
// line: `// sleep: <why>`.
func TestNoSleepInTests(t *testing.T) {
	t.Parallel()
	for _, f := range sources(t) {
		if !f.test {
			continue
		}
		lines := bytes.Split(f.src, []byte("\n"))
		ast.Inspect(f.ast, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "Sleep" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "time" {
				return true
			}
			line := f.fset.Position(call.Pos()).Line
			if !bytes.Contains(lines[line-1], []byte("// sleep: ")) {
				t.Errorf("%s:%d: time.Sleep in a test: wait with testutil.Eventually, or say why it is not waiting for anything (`// sleep: <why>` on the line)", f.path, line)
			}
			return true
		})
	}
}

// packageVars are the package-level variables of each package's production files.
func packageVars(files []goFile) map[string]map[string]bool {
	vars := map[string]map[string]bool{}
	for _, f := range files {
		if f.test {
			continue
		}
		for _, d := range f.ast.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.VAR {
				continue
			}
			for _, s := range g.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					if n.Name == "_" {
						continue
					}
					if vars[f.pkg] == nil {
						vars[f.pkg] = map[string]bool{}
					}
					vars[f.pkg][n.Name] = true
				}
			}
		}
	}
	return vars
}

// testsSetVars are the package variables tests change today: each is a reason its package's
// tests cannot run in parallel. The list only shrinks (issue 27): a test that needs another
// setting passes it to what it tests (a Config field, an option), it does not change a global.
var testsSetVars = map[string]bool{}

// TestTestsDoNotSetPackageVars: no test assigns a package-level variable of the project (in its
// own package, or through an import), beyond the shrinking list above.
func TestTestsDoNotSetPackageVars(t *testing.T) {
	t.Parallel()
	files := sources(t)
	vars := packageVars(files)
	found := map[string]bool{}
	for _, f := range files {
		if !f.test {
			continue
		}
		imports := map[string]string{} // local name → import path, for project packages
		for _, imp := range f.ast.Imports {
			p := strings.Trim(imp.Path.Value, `"`)
			if !strings.HasPrefix(p, module+"/") {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			imports[name] = p
		}
		internal := !strings.HasSuffix(f.ast.Name.Name, "_test") // not an external test package
		target := func(e ast.Expr) string {
			switch e := e.(type) {
			case *ast.Ident:
				// Unresolved in this file: declared at package level in another file.
				if internal && e.Obj == nil && vars[f.pkg][e.Name] {
					return f.pkg + "." + e.Name
				}
			case *ast.SelectorExpr:
				if x, ok := e.X.(*ast.Ident); ok && x.Obj == nil {
					if p, ok := imports[x.Name]; ok && vars[p][e.Sel.Name] {
						return p + "." + e.Sel.Name
					}
				}
			}
			return ""
		}
		ast.Inspect(f.ast, func(n ast.Node) bool {
			var lhs []ast.Expr
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok == token.DEFINE {
					return true
				}
				lhs = n.Lhs
			case *ast.IncDecStmt:
				lhs = []ast.Expr{n.X}
			default:
				return true
			}
			for _, e := range lhs {
				if v := target(e); v != "" {
					found[v] = true
					if !testsSetVars[v] {
						t.Errorf("%s:%d: a test sets the package variable %s: pass the setting to what is tested instead (tests that change globals cannot run in parallel)",
							f.path, f.fset.Position(e.Pos()).Line, v)
					}
				}
			}
			return true
		})
	}
	for v := range testsSetVars {
		if !found[v] {
			t.Errorf("%s is no longer set by a test: remove it from testsSetVars", v)
		}
	}
}

// codeStats are the figures issue 27 follows (docs/ARCHITECTURE.md, "Code structure").
type codeStats struct {
	prodLines, prodFiles, packages int // outside bench and internal
	benchLines                     int
	exported, undocumented         int
	undocumentedNames              []string
	longFuncs                      []string // functions over 100 lines outside bench
}

func measure(files []goFile) codeStats {
	var s codeStats
	pkgs := map[string]bool{}
	for _, f := range files {
		if f.test {
			continue
		}
		lines := bytes.Count(f.src, []byte("\n"))
		switch {
		case strings.HasPrefix(f.pkg, module+"/bench"):
			s.benchLines += lines
		case !strings.HasPrefix(f.pkg, module+"/internal/"):
			s.prodFiles++
			s.prodLines += lines
			pkgs[f.pkg] = true
		}
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
					s.exported++
					if d.Doc == nil {
						s.undocumented++
						s.undocumentedNames = append(s.undocumentedNames, f.path+":"+d.Name.Name)
					}
				}
				if d.Body != nil && !strings.HasPrefix(f.pkg, module+"/bench") {
					if n := f.fset.Position(d.End()).Line - f.fset.Position(d.Pos()).Line + 1; n > 100 {
						s.longFuncs = append(s.longFuncs, fmt.Sprintf("%s:%s (%d lines)", f.path, d.Name.Name, n))
					}
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					var names []*ast.Ident
					var doc *ast.CommentGroup
					switch sp := sp.(type) {
					case *ast.TypeSpec:
						names, doc = []*ast.Ident{sp.Name}, sp.Doc
					case *ast.ValueSpec:
						names, doc = sp.Names, sp.Doc
					}
					for _, n := range names {
						if !n.IsExported() {
							continue
						}
						s.exported++
						// A grouped declaration's comment documents its members.
						if doc == nil && d.Doc == nil {
							s.undocumented++
							s.undocumentedNames = append(s.undocumentedNames, f.path+":"+n.Name)
						}
					}
				}
			}
		}
	}
	s.packages = len(pkgs)
	return s
}

func exportedRecv(r *ast.FieldList) bool {
	if len(r.List) == 0 {
		return false
	}
	e := r.List[0].Type
	if st, ok := e.(*ast.StarExpr); ok {
		e = st.X
	}
	if ix, ok := e.(*ast.IndexExpr); ok {
		e = ix.X
	}
	if ix, ok := e.(*ast.IndexListExpr); ok {
		e = ix.X
	}
	id, ok := e.(*ast.Ident)
	return ok && id.IsExported()
}

// The ratchets: these figures may fall, never rise (lower them as the code improves).
const (
	maxUndocumented = 77
	maxLongFuncs    = 0
)

// TestCodeStats prints the figures of docs/ARCHITECTURE.md ("Code structure") with -v, and holds
// the ratchets.
func TestCodeStats(t *testing.T) {
	t.Parallel()
	s := measure(sources(t))
	t.Logf("production code: %d lines in %d files, %d packages (bench: %d lines)", s.prodLines, s.prodFiles, s.packages, s.benchLines)
	t.Logf("exported identifiers: %d, without a doc comment: %d", s.exported, s.undocumented)
	t.Logf("functions over 100 lines outside bench: %d %v", len(s.longFuncs), s.longFuncs)
	if os.Getenv("LINT_LIST_UNDOCUMENTED") != "" {
		t.Logf("undocumented: %s", strings.Join(s.undocumentedNames, "\n"))
	}
	if s.undocumented > maxUndocumented {
		t.Errorf("%d exported identifiers without a doc comment (at most %d): document the new ones", s.undocumented, maxUndocumented)
	}
	if len(s.longFuncs) > maxLongFuncs {
		t.Errorf("%d functions over 100 lines (at most %d): split the new ones: %v", len(s.longFuncs), maxLongFuncs, s.longFuncs)
	}
}
