package mcp

import (
	"encoding/json"
	"testing"
)

func TestCheckID(t *testing.T) {
	t.Parallel()
	for raw, ok := range map[string]bool{
		`1`: true, `-1`: true, `0`: true, `-0`: true, `1.0`: true, `1e3`: true, `1E+3`: true, `12.5e1`: true,
		`9223372036854775807`: true, `-9223372036854775808`: true, `9.223372036854775807e18`: true,
		`"x"`: true, `""`: true,
		`1.5`: false, `1e-1`: false, `1e40`: false, `9223372036854775808`: false, `-9223372036854775809`: false,
		`1e999999999`: false, `null`: false, `true`: false, `{}`: false, `[]`: false, ``: false,
	} {
		id, got := checkID(json.RawMessage(raw))
		if got != ok {
			t.Errorf("checkID(%s) = %v, want %v", raw, got, ok)
		}
		if ok && string(id) != raw {
			t.Errorf("checkID(%s) = %s: not as sent", raw, id)
		}
	}
}

func TestIDFixes(t *testing.T) {
	t.Parallel()
	f := idFixes{}
	for _, id := range []string{`1`, `"a"`, `-3`, `1.0`, `9007199254740993`, `1e2`} {
		f.add(json.RawMessage(id))
	}
	want := map[string]string{`1`: `1.0`, `9007199254740992`: `9007199254740993`, `100`: `1e2`}
	if len(f) != len(want) {
		t.Fatalf("fixes %v, want %v", f, want)
	}
	for k, v := range want {
		if string(f[k]) != v {
			t.Errorf("fix of %s = %s, want %s", k, f[k], v)
		}
	}
	got := restoreID(json.RawMessage(`{"jsonrpc":"2.0","id":100,"result":{"a":"<&>"}}`), f)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(got, &m); err != nil || string(m["id"]) != `1e2` || string(m["result"]) != `{"a":"<&>"}` {
		t.Errorf("restoreID: %s", got)
	}
}

func TestTooDeep(t *testing.T) {
	t.Parallel()
	deep := func(n int) []byte {
		b := make([]byte, 0, 2*n)
		for i := 0; i < n; i++ {
			b = append(b, '[')
		}
		for i := 0; i < n; i++ {
			b = append(b, ']')
		}
		return b
	}
	if tooDeep(deep(maxDepth)) {
		t.Error("maxDepth levels are allowed")
	}
	if !tooDeep(deep(maxDepth + 1)) {
		t.Error("maxDepth+1 levels are refused")
	}
	s := []byte(`["` + string(deep(maxDepth+1)) + `"]`)
	if tooDeep(s) {
		t.Error("brackets inside a string do not nest")
	}
}

func TestRestoreIDKeepsOrder(t *testing.T) {
	t.Parallel()
	f := idFixes{}
	f.add(json.RawMessage(`1.0`))
	got := restoreID(json.RawMessage(`{"jsonrpc":"2.0","id":1,"result":{}}`), f)
	if string(got) != `{"jsonrpc":"2.0","id":1.0,"result":{}}` {
		t.Errorf("restoreID: %s", got)
	}
	got = restoreID(json.RawMessage(`{"jsonrpc":"2.0","id":2,"result":{}}`), f)
	if string(got) != `{"jsonrpc":"2.0","id":2,"result":{}}` {
		t.Errorf("restoreID of another id: %s", got)
	}
}
