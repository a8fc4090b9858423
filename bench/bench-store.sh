#!/usr/bin/env bash
# bench-store: the profile store's figures (issue 13; docs/STORE.md keeps them with their date).
# Windows are simulated by build/store-gen: one JVM, 10-s windows drawn from 20,000 distinct
# Java-like stacks (Zipf), 3,960 samples a window at the busiest normal hour (4 busy threads at
# 99 Hz), a daily rhythm and a 14:00-15:00 UTC spike at 2.2 times that.
#  1. bytes per window in steady state: the growth of the store over one hour once the day's
#     stacks are known (13:00-14:00 UTC, after 13 hours written by the same writer), and over the
#     spike hour; SQLite (file size) and ClickHouse (bytes_on_disk of our tables after OPTIMIZE
#     FINAL)
#  2. `docker flame show` over 1 h and over 24 h of those 10-s windows, SVG written to
#     /dev/null, median of STORE_RUNS runs (goals: 0.3 s and 2 s), from SQLite and ClickHouse
#     and `ls`, `diff` of two hours
#  3. deep stacks (store-gen --workload deep: a compiler's, ~100 frames, most of them new in the
#     first hour; docs/BENCHMARKS.md): bytes per 10-s window hour by hour, as one recorder at
#     the defaults writes them (one busy thread at 49 Hz: 490 samples a window, a put each, the
#     store compacted every hour), into SQLite and ClickHouse; then `show` of an hour of them
#  4. a simulated week (STORE_DAYS days ending now) in SQLite: size before and after
#     `docker flame prune` (7 days kept; older than 1 h: 1-min buckets; than 1 d: 10-min)
# Prints figures; not pass/fail. Needs clickhouse-server for the ClickHouse figures (skipped with
# a line when it is not installed). STORE_DAYS (7; 0 = no week), STORE_RUNS (5), STORE_SKIP_CH=1,
# STORE_DEEP_HOURS (3; 0 = no deep stacks), STORE_ONLY=deep (the deep figures alone) override;
# STORE_BUILD=DIR takes store-gen and docker-flame from another build (an older one: before and
# after figures of one command); STORE_REPLAY=FILE replays a real recording (store-gen --dump of
# `docker flame record`) in the deep figures' place, 490 of its samples a window.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. "$ROOT/tests/e2e/lib.sh"
. "$ROOT/tests/e2e/clickhouse-lib.sh"
GEN=${STORE_BUILD:-$BUILD}/store-gen
FLAME=${STORE_BUILD:-$BUILD}/docker-flame
DAYS=${STORE_DAYS:-7}
RUNS=${STORE_RUNS:-5}
DEEP_HOURS=${STORE_DEEP_HOURS:-3}
ONLY=${STORE_ONLY:-}
[ -x "$GEN" ] && [ -x "$FLAME" ] || { echo "bench-store: build first (make)"; exit 1; }
cd "$TMP" || exit 1
export XDG_DATA_HOME=$TMP/xdg
unset DOCKER_FLAME_STORE
WORK=(--workload many --stacks 20000 --samples 3960 --container web)
H=3600000
DAY0=$(( ($(date +%s) / 86400 - 1) * 86400 * 1000 )) # yesterday 00:00 UTC: a whole day
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }

# gen STORE START WINDOWS SEED: prints the per-window line of store-gen
gen() {
    "$GEN" --store "$1" "${WORK[@]}" --start "$2" --windows "$3" --seed "$4" --batch 360 |
        sed 's/^store-gen: //'
}
# the file once the WAL is checkpointed into it (the writer may be open, between two puts)
sqlite_size() {
    python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$1"
    stat -c %s "$1"
}
# the bytes of a database's tables once merged (whatever schema: an older build's too)
ch_db_size() {
    local t
    for t in $(ch_sql one "SELECT name FROM system.tables WHERE database = '$1' AND engine LIKE '%MergeTree'"); do
        ch_sql one "OPTIMIZE TABLE $1.$t FINAL" >/dev/null
    done
    ch_sql one "SELECT sum(bytes_on_disk) FROM system.parts WHERE active AND database = '$1'"
}
ch_size() { ch_db_size flame; }
ch_size_deep() { ch_db_size deep; }
# median of RUNS runs of "$@", in seconds
median_s() {
    local i t0 t1 ts=()
    for i in $(seq "$RUNS"); do
        t0=$(date +%s%N)
        "$@" >/dev/null 2>&1 || { echo "failed"; return; }
        t1=$(date +%s%N)
        ts+=($(((t1 - t0) / 1000000)))
    done
    printf '%s\n' "${ts[@]}" | sort -n | awk '{ a[NR] = $1 } END { printf "%.2f", a[int((NR + 1) / 2)] / 1000 }'
}

# day STORE SIZEFN NAME: a day of windows by ONE writer (as one recorder that runs all day: a
# ClickHouse writer numbers its stacks per run), paused every hour; the store measured after
# 13, 14 and 15 hours; then the show timings
day() {
    local st=$1 size=$2 name=$3 h=0 line a b c d pid rfd wfd
    coproc GEN_DAY { "$GEN" --store "$st" "${WORK[@]}" --start "$DAY0" --windows 8640 --seed 1 \
        --batch 360 --pause-every 360 2>&1; }
    # the coproc's fds kept: bash unsets GEN_DAY once it exits, before its last line is read
    pid=$GEN_DAY_PID rfd=${GEN_DAY[0]} wfd=${GEN_DAY[1]}
    while { read -r line <&"$rfd"; } 2>/dev/null; do # closed once the generator is done
        case $line in
        *paused*) h=$((h + 1)) ;;
        *) echo "store: $name: $line"; continue ;;
        esac
        line=${line#*; the last 360: }
        case $h in
        13) a=$($size "$st") ;;
        14) b=$($size "$st")
            echo "store: $name: steady hour (13:00-14:00 UTC; $line): $(((b - a) / 360)) bytes per 10-s window (goal <= 2048)" ;;
        15) c=$($size "$st")
            echo "store: $name: spike hour (14:00-15:00 UTC; $line): $(((c - b) / 360)) bytes per 10-s window" ;;
        esac
        echo >&"$wfd"
    done
    wait "$pid" 2>/dev/null
    d=$($size "$st")
    echo "store: $name: a day of 8,640 windows: $d bytes ($((d / 1048576)) MiB, stacks included)"
    echo "store: $name: show 1 h (13:00-14:00, 360 windows): $(median_s "$FLAME" show web --store "$st" \
        --since "$(iso $((DAY0 + 13 * H)))" --until "$(iso $((DAY0 + 14 * H)))" -o /dev/null) s (goal <= 0.3)"
    echo "store: $name: show 24 h (8,640 windows): $(median_s "$FLAME" show web --store "$st" \
        --since "$(iso "$DAY0")" --until "$(iso $((DAY0 + 24 * H)))" -o /dev/null) s (goal <= 2)"
    echo "store: $name: ls: $(median_s "$FLAME" ls --store "$st") s"
    echo "store: $name: diff of 13:00-14:00 and 14:00-15:00: $(DOCKER_FLAME_STORE=$st median_s "$FLAME" diff \
        "web@$(iso $((DAY0 + 13 * H)))..$(iso $((DAY0 + 14 * H)))" \
        "web@$(iso $((DAY0 + 14 * H)))..$(iso $((DAY0 + 15 * H)))" -o /dev/null) s"
}

# deep STORE SIZEFN NAME: DEEP_HOURS hours of a compiler's windows by one writer (a put a
# window, as the recorder), the store measured every hour
deep() {
    local st=$1 size=$2 name=$3 h=0 line a b pid goal rfd wfd
    local start=$(( ($(date +%s) / 3600 - DEEP_HOURS - 1) * 3600 * 1000 ))
    a=$($size "$st")
    # STORE_REPLAY=FILE: a real recording's samples (store-gen --dump) instead of the generator's
    local work=(--workload deep --seed 7)
    [ -n "${STORE_REPLAY:-}" ] && work=(--workload replay --fixture "$STORE_REPLAY")
    coproc GEN_DEEP { "$GEN" --store "$st" "${work[@]}" --container javac --samples 490 \
        --start "$start" --windows $((DEEP_HOURS * 360 + 1)) --pause-every 360 \
        --compact-every 360 2>&1; }
    pid=$GEN_DEEP_PID rfd=${GEN_DEEP[0]} wfd=${GEN_DEEP[1]}
    while { read -r line <&"$rfd"; } 2>/dev/null; do # closed once the generator is done
        case $line in
        *paused*) h=$((h + 1)) ;;
        *) echo "store: $name deep: $line"; continue ;;
        esac
        b=$($size "$st")
        goal=
        [ "$h" -ge 2 ] && goal=" (goal <= 2048 after the first hour)"
        echo "store: $name deep: hour $h (${line#*; the last 360: }): $(((b - a) / 360)) bytes per 10-s window$goal"
        a=$b
        echo >&"$wfd"
    done
    wait "$pid" 2>/dev/null
    b=$($size "$st")
    echo "store: $name deep: $DEEP_HOURS hours: $b bytes ($((b / 1048576)) MiB)"
    echo "store: $name deep: show 1 h (the last): $(median_s "$FLAME" show javac --store "$st" \
        --since "$(iso $((start + (DEEP_HOURS - 1) * H)))" --until "$(iso $((start + DEEP_HOURS * H)))" -o /dev/null) s"
}

echo "store: $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); $FLAME"
[ "$ONLY" = deep ] || { echo "store: workload: ${WORK[*]}"; day "$TMP/day.db" sqlite_size SQLite; }
[ "$DEEP_HOURS" -gt 0 ] && deep "$TMP/deep.db" sqlite_size SQLite

if [ "${STORE_SKIP_CH:-}" = 1 ]; then
    echo "store: ClickHouse: skipped (STORE_SKIP_CH=1)"
elif ! ch_have; then
    echo "store: ClickHouse: skipped (clickhouse-server is not installed: ./install.sh --deps-only --test-deps)"
elif ! ch_start one; then
    echo "store: ClickHouse: the server did not start"
else
    echo "store: ClickHouse $(ch_sql one 'SELECT version()') on 127.0.0.1"
    [ "$ONLY" = deep ] || day "clickhouse://127.0.0.1:$CH_HTTP_one/flame" ch_size ClickHouse
    [ "$DEEP_HOURS" -gt 0 ] && deep "clickhouse://127.0.0.1:$CH_HTTP_one/deep" ch_size_deep ClickHouse
    ch_stop one
fi
[ "$ONLY" = deep ] && exit 0

# the week: windows up to now, then what `docker flame prune` keeps
[ "$DAYS" -gt 0 ] || exit 0
now=$(( $(date +%s) * 1000 / 10000 * 10000 ))
n=$((DAYS * 8640))
t0=$(date +%s)
line=$(gen "$TMP/week.db" $((now - n * 10000)) "$n" 5)
before=$(sqlite_size "$TMP/week.db")
echo "store: SQLite: $DAYS days of windows ($line): $before bytes ($((before / 1048576)) MiB)"
out=$("$FLAME" prune --store "$TMP/week.db" 2>&1)
after=$(sqlite_size "$TMP/week.db")
echo "store: SQLite: after prune: $after bytes ($((after / 1048576)) MiB); $out"
echo "store: SQLite: show the whole week (compacted): $(median_s "$FLAME" show web --store "$TMP/week.db" \
    --since "$(iso $((now - n * 10000)))" --until "$(iso "$now")" -o /dev/null) s"
echo "store: the week took $(($(date +%s) - t0)) s to generate and prune"
