package main

import (
	"bytes"
	"flag"
	"io"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// Every boolean flag of serve takes the bare form (--pprof), and =true / =false, and its
// FLIPBOOK_ variable; none is a string flag holding "true" or "false" (which refuses the bare
// form with "flag needs an argument").
func TestBooleanFlagsTakeTheBareForm(t *testing.T) {
	get := map[string]func(*serveFlags) bool{
		"pprof":                 func(f *serveFlags) bool { return f.cfg.PProf },
		"allow-private-targets": func(f *serveFlags) bool { return f.cfg.AllowPrivateTargets },
		"trust-geo-headers":     func(f *serveFlags) bool { return f.cfg.TrustGeoHeaders },
	}
	for name, val := range get {
		f, err := parseServeFlags(nil, envMap(nil), io.Discard)
		require.NoError(t, err, name)
		require.False(t, val(f), "%s defaults to false", name)
		f, err = parseServeFlags([]string{"--" + name}, envMap(nil), io.Discard)
		require.NoError(t, err, "--%s alone", name)
		require.True(t, val(f), "--%s alone", name)
		for _, v := range []string{"true", "false"} {
			f, err = parseServeFlags([]string{"--" + name + "=" + v}, envMap(nil), io.Discard)
			require.NoError(t, err, "--%s=%s", name, v)
			require.Equal(t, v == "true", val(f), "--%s=%s", name, v)
		}
		env := envMap(map[string]string{envName(name): "true"})
		f, err = parseServeFlags(nil, env, io.Discard)
		require.NoError(t, err)
		require.True(t, val(f), "%s from the environment", envName(name))
		f, err = parseServeFlags([]string{"--" + name + "=false"}, env, io.Discard)
		require.NoError(t, err)
		require.False(t, val(f), "the flag wins over %s", envName(name))
		_, err = parseServeFlags([]string{"--" + name + "=maybe"}, envMap(nil), io.Discard)
		require.ErrorContains(t, err, "--"+name)
	}

	// No other flag is a boolean spelled as a string: the help lists none with a string
	// default of "true" or "false".
	var help bytes.Buffer
	_, err := parseServeFlags([]string{"-h"}, envMap(nil), &help)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.NotRegexp(t, regexp.MustCompile(`(?m)^\s+-\S+ string\n[^\n]*\(default "(true|false)"\)`), help.String())
	for name := range get {
		require.Regexp(t, regexp.MustCompile(`(?m)^\s+-`+regexp.QuoteMeta(name)+`\n`), help.String(), "%s is listed as a boolean", name)
	}
}
