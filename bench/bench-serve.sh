#!/usr/bin/env bash
# bench-serve: `docker flame serve`'s figures (docs/SERVE.md "Figures"), on a day of 10-s windows
# of SERVE_CONTAINERS (10) JVMs in SQLite, written by build/store-gen (the store bench's workload:
# 20,000 distinct stacks, 3,960 samples a window at the busiest hour); SERVE_STORE=FILE reuses
# one (writing it takes about 100 s a container on a 2-core machine).
#  1. the first flame graph of the whole day painted in headless chromium, from navigation (the
#     timeline's query included), the server's cache empty; the nodes sent and drawn
#  2. a hover and a zoom click over that graph (8,192 nodes): the page's synchronous work
#  3. one search's round trip (the server's exact count included)
#  4. the server's memory (VmRSS, VmHWM) after 8 different ranges merged and cached
#  5. its CPU while idle for 10 s
# Prints figures; not pass/fail. Needs chromium and tests/browser's npm packages for 1-3.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
GEN=build/store-gen
FLAME=build/docker-flame
N=${SERVE_CONTAINERS:-10}
[ -x "$GEN" ] && [ -x "$FLAME" ] || { echo "bench-serve: build first (make)"; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/bench-serve.XXXXXX")
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
DAY0=$(( ($(date +%s) / 86400 - 1) * 86400 * 1000 )) # yesterday 00:00 UTC: a whole day
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }
store=${SERVE_STORE:-$tmp/serve.db}
if [ -z "${SERVE_STORE:-}" ]; then
    for i in $(seq 0 $((N - 1))); do
        "$GEN" --store "$store" --workload many --stacks 20000 --samples 3960 --container "c$i" \
            --start "$DAY0" --windows 8640 --seed $((i + 1)) --batch 360 2>&1 | sed 's/^/serve: /'
    done
fi
mkfifo "$tmp/url"
"$FLAME" serve --store "$store" >"$tmp/url" 2>"$tmp/err" &
srv=$!
read -r -t 60 url <"$tmp/url" || { echo "bench-serve: serve did not start: $(cat "$tmp/err")"; exit 1; }
port=$(sed -E 's#^http://127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$url")
ck="docker_flame_$port=${url#*token=}"
day="from=$(iso "$DAY0")&to=$(iso $((DAY0 + 86400000)))"
echo "serve: $N containers x 8640 10-s windows, SQLite $(($(stat -c %s "$store") / 1048576)) MiB"
if command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
    node tests/browser/serve-time.js "$url&$day" | sed 's/^/serve: /'
else
    echo "serve: no chromium figures (node or tests/browser/node_modules missing)"
fi
api() { curl -s -o /dev/null -w '%{time_total}' -b "$ck" "http://127.0.0.1:$port/api/v1/$1"; }
# 8 ranges of 3 h: each merged once and kept (the cache holds 8)
for h in 0 3 6 9 12 15 18 21; do
    s=$(iso $((DAY0 + h * 3600000)))
    u=$(iso $((DAY0 + (h + 3) * 3600000)))
    t=$(api "flamegraph?since=$s&until=$u")
    echo "serve: flamegraph $s .. $u (all containers, cold): ${t} s"
done
echo "serve: memory after 8 ranges: $(awk '/^VmRSS|^VmHWM/ {printf "%s %d MB ", $1, $2 / 1024}' "/proc/$srv/status")"
c0=$(awk '{print $14 + $15}' "/proc/$srv/stat")
sleep 10 # the figure is what an idle server uses in 10 s
c1=$(awk '{print $14 + $15}' "/proc/$srv/stat")
echo "serve: idle CPU over 10 s: $((c1 - c0)) ticks ($(getconf CLK_TCK)/s)"
kill -INT "$srv"
wait "$srv"
srv=
