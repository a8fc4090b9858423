# Go's pprof as the consumer of our pprof files (tests/e2e/pprof-*.t). Source after lib.sh.
# go_env: Go's caches under this test's $TMP, the network off (GOPROXY=off, GOTOOLCHAIN=local:
# never fetch a toolchain), so `go tool pprof` runs offline on a fresh machine.
go_env() {
    export HOME=$TMP/go-home GOCACHE=$TMP/go-cache GOPATH=$TMP/go-path GOFLAGS=-mod=mod \
        GOTOOLCHAIN=local GOPROXY=off GOTELEMETRY=off PPROF_TMPDIR=$TMP/go-pprof
    mkdir -p "$HOME" "$GOCACHE" "$GOPATH" "$PPROF_TMPDIR"
}
have_go() { command -v go >/dev/null && go tool -n pprof >/dev/null 2>&1; }
# pprof_matches FOLDED PPROF WHAT: tests/e2e/pprof-check.py's checks as TAP results.
pprof_matches() {
    local out line
    out=$(python3 "$ROOT/tests/e2e/pprof-check.py" "$1" "$2" 2>&1)
    for k in total top10 traces; do
        line=$(printf '%s\n' "$out" | grep "^$k	")
        is "${line#*	}" ok "$3: go tool pprof's $k = the folded output's"
        [ "${line#*	}" = ok ] || fdiag "$out"
    done
    PPROF_TOP=$(printf '%s\n' "$out" | sed -n 's/^top	//p')
}
