#!/usr/bin/env bash
# Says what a first build on a fresh machine is doing instead of going silent for minutes
# (make build, make test): fetches the Go modules the packages need (go prints each download),
# then compiles with the names of the packages being compiled (none when the cache is warm).
#
#   scripts/gobuild.sh build OUT PKG      fetch, then go build -v -o OUT PKG
#   scripts/gobuild.sh fetch PKGS...      fetch what building and testing PKGS needs
set -euo pipefail
GO=${GO:-go}
fetch() {
	echo "==> Go modules: fetching any not yet in $($GO env GOMODCACHE) (first build only)"
	$GO list -deps -test "$@" >/dev/null
}
case "$1" in
fetch) shift; fetch "$@" ;;
build)
	out=$2 pkg=$3
	fetch "$pkg"
	echo "==> compiling $out (the first build compiles about 900 packages and links DuckDB: a few minutes on 2 cores; later builds take seconds)"
	$GO build -v -o "$out" "$pkg"
	echo "==> built $out"
	;;
*) echo "usage: $0 build OUT PKG | fetch PKGS..." >&2; exit 2 ;;
esac
