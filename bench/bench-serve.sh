#!/usr/bin/env bash
# bench-serve: `docker flame serve`'s figures (docs/SERVE.md "Figures"), on a day of 10-s windows
# of SERVE_CONTAINERS (10) JVMs in SQLite, written by build/store-gen (the store bench's workload:
# 20,000 distinct stacks, 3,960 samples a window at the busiest hour); SERVE_STORE=FILE reuses
# one (writing it takes about 45-100 s a container on a 2-core machine), and builds its hour
# rollups (SERVE_ROLLUPS=0: not).
#  1. the first flame graph of the whole day painted in headless chromium, from navigation (the
#     page asks the timeline after it), the server's cache empty, in a browser that has run for
#     SERVE_TIME_WARM (5) seconds, as a user's has (0: navigate as soon as chromium starts);
#     the nodes sent and drawn; where the time went (when the graph was asked and answered, the
#     server's Server-Timing split: merge, tree, json; what the page did after)
#  2. a hover and a zoom click over that graph (8,192 nodes): the page's synchronous work
#  3. one search's round trip (the server's exact count included)
#  4. the server's memory (VmRSS, VmHWM) after 8 different ranges merged and cached
#  5. its CPU while idle for 10 s
# Then the same from ClickHouse (a clickhouse-server of its own on 127.0.0.1, as the tests start
# one) on SERVE_CH_CONTAINERS (10) container-days: c0 written by store-gen (its CPU, not the
# server, bounds that: ~40 s a container-day), the others copied from it by the server (each
# with a run, so a dictionary, and uids of its own: what the readers sum and name is 10 JVMs'),
# measured on the windows alone, then with the hour rollups compaction builds (SERVE_ROLLUPS=0:
# the windows alone). SERVE_CH_CONTAINERS=0 skips it; SERVE_CONTAINERS=0 skips SQLite.
# Prints figures; not pass/fail. Needs chromium and tests/browser's npm packages for 1-3.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. "$ROOT/tests/e2e/lib.sh"
. "$ROOT/tests/e2e/clickhouse-lib.sh"
GEN=$ROOT/build/store-gen
FLAME=$ROOT/build/docker-flame
N=${SERVE_CONTAINERS:-10}
NCH=${SERVE_CH_CONTAINERS:-10}
[ -x "$GEN" ] && [ -x "$FLAME" ] || { echo "bench-serve: build first (make)"; exit 1; }
export XDG_DATA_HOME=$TMP/xdg
unset DOCKER_FLAME_STORE
srv=
browser=
# The browser's scratch (tests/browser/lib.js: flame-browser-*, chromium's profile in it, and
# whatever chromium puts in TMPDIR) goes under $TMP, which lib.sh's EXIT trap removes: on every
# path out, Ctrl-C and a failing run included, not only when serve-time.js ends well.
mkdir -p "$TMP/browser"
# The page's node, then its chromium: playwright starts chromium in a process group of its own,
# and a chromium told to stop still writes its profile (sessions, preferences) on the way out,
# after a node killed halfway could remove it. Its processes are found by the profile dir on
# their command line (ours alone), stopped and waited for (5 s, then KILL), then the dir goes.
browser_stop() {
    local i pids sig=TERM
    [ -n "$browser" ] && kill "$browser" 2>/dev/null && wait "$browser" 2>/dev/null
    browser=
    # the pattern from a file: on grep's own command line it would find grep
    printf '%s\n' "$TMP/browser/" >"$TMP/browser.pat"
    for i in $(seq 50); do
        pids=$(grep -lsF -f "$TMP/browser.pat" /proc/[0-9]*/cmdline | cut -d/ -f3)
        [ -z "$pids" ] && break
        [ "$i" -gt 25 ] && sig=KILL
        kill -s "$sig" $pids 2>/dev/null
        sleep 0.2
    done
    rm -rf "$TMP/browser"
}
lib_cleanup_extra() { # lib.sh's trap: the page's node and chromium, the server, ClickHouse
    browser_stop
    [ -n "$srv" ] && kill "$srv" 2>/dev/null
    local d
    for d in "$TMP"/ch-*/; do
        [ -d "$d" ] && ch_stop "$(basename "$d" | sed 's/^ch-//')"
    done
}
DAY0=$(( ($(date +%s) / 86400 - 1) * 86400 * 1000 )) # yesterday 00:00 UTC: a whole day
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }

write() { # STORE CONTAINERS
    local i
    for i in $(seq 0 $(($2 - 1))); do
        "$GEN" --store "$1" --workload many --stacks 20000 --samples 3960 --container "c$i" \
            --start "$DAY0" --windows 8640 --seed $((i + 1)) --batch 360 2>&1 | sed 's/^/serve: /'
    done
}

write_ch() { # DB CONTAINERS: c0 by store-gen, c1.. copied by the server (bulk, in seconds)
    local i t0
    write "clickhouse://127.0.0.1:$CH_HTTP_one/$1" 1
    t0=$(date +%s%N)
    for i in $(seq 1 $(($2 - 1))); do
        ch_sql one "INSERT INTO $1.dict SELECT cityHash64(run, $i), seq, stacks, at, chunk FROM $1.dict
                WHERE run IN (SELECT run FROM $1.windows WHERE container_name = 'c0')" &&
            ch_sql one "INSERT INTO $1.windows SELECT host, concat(lower(hex(cityHash64(container_id, $i))),
                lower(hex(cityHash64($i, container_id))), lower(hex(cityHash64(container_id, $i, 1))),
                lower(hex(cityHash64(container_id, $i, 2)))), 'c$i', image, jvm_pid, jvm_version, start_ms,
                end_ms, frequency, samples, level, cityHash64(run, $i), ids, ids_hi, counts, counts_hi,
                cityHash64(uid, $i), type FROM $1.windows WHERE container_name = 'c0'" || return 1
    done
    echo "serve: c1..c$(($2 - 1)) copied from c0 by the server in $((($(date +%s%N) - t0) / 1000000)) ms"
}

figures() { # STORE LABEL
    local url port ck day t s u h c0 c1
    rm -f "$TMP/url"
    mkfifo "$TMP/url"
    "$FLAME" serve --store "$1" >"$TMP/url" 2>"$TMP/err" &
    srv=$!
    read -r -t 60 url <"$TMP/url" || { echo "bench-serve: serve did not start: $(cat "$TMP/err")"; return 1; }
    port=$(sed -E 's#^http://127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$url")
    ck="docker_flame_$port=${url#*token=}"
    day="from=$(iso "$DAY0")&to=$(iso $((DAY0 + 86400000)))"
    echo "serve: $2"
    if command -v node >/dev/null && [ -d tests/browser/node_modules/playwright-core ]; then
        TMPDIR=$TMP/browser SERVE_TIME_WARM=${SERVE_TIME_WARM-5} node tests/browser/serve-time.js \
            "$url&$day" >"$TMP/page.txt" 2>&1 &
        browser=$!
        wait "$browser"
        browser=
        sed 's/^/serve: /' "$TMP/page.txt"
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
}

store=${SERVE_STORE:-$TMP/serve.db}
if [ "$N" -gt 0 ]; then
    [ -n "${SERVE_STORE:-}" ] || write "$store" "$N"
    # the hour rollups a recorder's hourly compaction builds (docs/STORE.md), the windows kept as
    # they are; SERVE_ROLLUPS=0 measures the raw windows alone
    if [ "${SERVE_ROLLUPS:-1}" != 0 ]; then
        "$GEN" --store "$store" --container rollup --windows 0 --rollup | sed 's/^/serve: /'
    fi
    figures "$store" "SQLite, $N containers x 8640 10-s windows, $(($(stat -c %s "$store") / 1048576)) MiB"
fi

if [ "$NCH" -gt 0 ]; then
    if ! ch_have; then
        echo "serve: ClickHouse: skipped (clickhouse-server is not installed)"
    elif ! ch_start one; then
        echo "serve: ClickHouse: the server did not start"
    else
        ch="clickhouse://127.0.0.1:$CH_HTTP_one/flame"
        write_ch flame "$NCH"
        what="ClickHouse $(ch_sql one 'SELECT version()'), $NCH containers x 8640 10-s windows"
        figures "$ch" "$what, the windows alone"
        if [ "${SERVE_ROLLUPS:-1}" != 0 ]; then
            "$GEN" --store "$ch" --container rollup --windows 0 --rollup | sed 's/^/serve: /'
            figures "$ch" "$what, with hour rollups"
        fi
        ch_stop one
    fi
fi
