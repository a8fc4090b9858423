#!/usr/bin/env bash
# `docker flame serve` on a real recording: two fixture containers recorded at once into a SQLite
# store, then served; the page (headless chromium, tests/browser/serve-page.js) shows a timeline
# row for each and names the hot method in its function table; the API's folded export of the
# range is byte for byte `show --format folded`; the server needs no engine (DOCKER_HOST pointed
# at nothing) and stops on Ctrl-C with exit 0; nothing is left behind.
. "$(dirname "$0")/top-lib.sh"

HOT='FlameFixture\.(countPrimes|isPrime)'
DB=$TMP/serve.db
stored() { local n; n=$(grep -c "stored (" "$1" 2>/dev/null); [ "${n:-0}" -ge "$2" ]; }

a=$(fixture pid1) || bail "fixture a did not start"
b=$(fixture pid1) || bail "fixture b did not start"
an=$(docker inspect -f '{{.Name}}' "$a"); an=${an#/}
bn=$(docker inspect -f '{{.Name}}' "$b"); bn=${bn#/}

timeout -k 10 300 docker flame record "$a" "$b" --window 1s --store "$DB" >out 2>err &
pid=$!
if wait_for 180 stored err 6; then ok "both recorded: six windows stored"; else nok "both recorded: six windows stored"; fdiag "$(cat err)"; fi
ctrl_c "$pid"
wait $pid
is "$?" 0 "the recording: exit 0 on Ctrl-C"

# the server reads the store only: no engine
srv=
lib_cleanup_extra() { [ -n "$srv" ] && kill "$srv" 2>/dev/null; }
mkfifo url.fifo
DOCKER_HOST=unix:///nonexistent "$BUILD/docker-flame" serve --store "$DB" >url.fifo 2>serve.err &
srv=$!
read -r -t 60 url <url.fifo
like "$url" '^http://127\.0\.0\.1:[0-9]+/\?token=[0-9a-f]{64}$' "serve prints its URL"
port=$(sed -E 's#^http://127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$url")
ck="docker_flame_$port=${url#*token=}"

if command -v node >/dev/null && [ -d "$ROOT/tests/browser/node_modules/playwright-core" ]; then
    out=$(timeout -k 5 180 node "$ROOT/tests/browser/serve-page.js" "$url" "$HOT" "$an" "$bn" 2>&1)
    diag "$out"
    like "$out" '^1\.\.[1-9]' "the page check ran"
    unlike "$out" '^not ok' "the page shows both containers and names the hot method"
else
    skip_or_fail "node or tests/browser/node_modules missing (npm ci --prefix tests/browser)"
fi

now=$(date -u +%s)
si=$(date -u -d "@$((now - 600))" +%Y-%m-%dT%H:%M:%SZ)
un=$(date -u -d "@$((now + 1))" +%Y-%m-%dT%H:%M:%SZ)
curl -s -b "$ck" -o api.folded "http://127.0.0.1:$port/api/v1/export?c=$an&since=$si&until=$un&format=folded"
docker flame show "$an" --store "$DB" --since "$si" --until "$un" --format folded -o show.folded 2>/dev/null
check "the API's folded export of $an = show --format folded" cmp -s api.folded show.folded
like "$(cat api.folded)" "$HOT" "and names the hot method"

kill -INT "$srv"
wait "$srv"
is "$?" 0 "serve: exit 0 on Ctrl-C"
like "$(cat serve.err)" 'stopped' "says it stopped"
srv=
check "no sidecar left" test "$(sidecars_of "$(docker inspect -f '{{.Id}}' "$a")")" -eq 0 -a \
    "$(sidecars_of "$(docker inspect -f '{{.Id}}' "$b")")" -eq 0
done_testing
