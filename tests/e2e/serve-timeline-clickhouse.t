#!/usr/bin/env bash
# The serve page's timeline from a ClickHouse store (docs/SERVE.md, "Timeline"), on a real
# clickhouse-server (Debian's, its own config and data under $TMP; no Docker engine needed): the
# server merges the windows of a bucket into one row (store_query.bucket_ms), and the timeline
# the page gets is the one of the same windows in SQLite, read one by one: every bucket's
# samples, covered ms and cores, each series' windows and total, every mark (gaps, compacted
# runs, a JVM restart, a recreated container), at several widths, for a range that cuts
# windows, one container, and the wall type. The windows: 10-s ones off the buckets' bounds,
# pauses of 1.5 s (no gap) and of 25 s (a gap), an empty window now and then, 1-min compacted
# ones, 7-s ones that cross bucket bounds, a rate that changes inside a bucket, overlapping
# windows whose lengths add up to their span around a pause.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse-lib.sh"
ch_test_setup
ch_start one || bail "clickhouse-server one did not start"
CH=clickhouse://127.0.0.1:$CH_HTTP_one/tl
SQ=$TMP/tl.db
srvs=()
lib_cleanup_extra() {
    local p
    for p in "${srvs[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
    ch_stop one
}

H=3600000
T=$(( ($(date +%s) / 3600 - 4) * H )) # four hours ago, on the hour
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }
g() { "$GEN" --workload many --stacks 200 --samples 300 --batch 100 "$@" >/dev/null; }
gen() { # STORE
    local s=$1 a=$((T + 3333))
    g --store "$s" --container web --pid 10 --seed 1 --start $a --windows 300 --empty-every 40 &&
        a=$((a + 300 * 10000 + 1500)) &&
        g --store "$s" --container web --pid 10 --seed 2 --start $a --windows 200 &&
        a=$((a + 200 * 10000 + 25000)) &&
        g --store "$s" --container web --pid 10 --seed 3 --start $a --windows 100 &&
        g --store "$s" --container web --pid 10 --seed 4 --type wall --start $((T + 3333)) \
            --windows 600 &&
        a=$((a + 100 * 10000 + 60000)) &&
        g --store "$s" --container web --pid 11 --seed 5 --start $a --windows 120 &&
        g --store "$s" --container api --pid 7 --seed 6 --start $((T + 120000)) \
            --window-ms 60000 --windows 150 &&
        g --store "$s" --container db --id dddd0001 --pid 3 --seed 7 --start $((T + 777)) \
            --window-ms 7000 --windows 400 &&
        g --store "$s" --container db --id dddd0002 --pid 3 --seed 8 --start $((T + 3000000)) \
            --window-ms 7000 --windows 400 &&
        rates "$s" && overlaps "$s"
}
# rate: the rate changes in a bucket, 100 -> 50 -> 100 Hz (10-s windows), and a 1-s window at
# 50 Hz between 100-Hz ones that pause 0
rates() {
    local r=$((T + 1800000)) r2=$((T + 2400000))
    g --store "$1" --container rate --pid 4 --seed 9 --frequency 100 --start $r --windows 2 &&
        g --store "$1" --container rate --pid 4 --seed 10 --frequency 50 --start $((r + 20000)) \
            --windows 1 &&
        g --store "$1" --container rate --pid 4 --seed 11 --frequency 100 --start $((r + 30000)) \
            --windows 4 &&
        g --store "$1" --container rate --pid 4 --seed 12 --frequency 100 --start $r2 --windows 1 &&
        g --store "$1" --container rate --pid 4 --seed 13 --frequency 50 --start $((r2 + 10000)) \
            --window-ms 1000 --windows 1 &&
        g --store "$1" --container rate --pid 4 --seed 14 --frequency 100 --start $((r2 + 11000)) \
            --windows 6
}
# ov: overlapping windows that hide a pause from a sum: [0,10] [2,12] then [20,30] [30,40] s (in
# start order the third starts 8 s after the second ends: a gap, though the lengths add up to
# the span)
overlaps() {
    local o=$((T + 3000000))
    g --store "$1" --container ov --pid 5 --seed 15 --start $o --windows 1 &&
        g --store "$1" --container ov --pid 5 --seed 16 --start $((o + 2000)) --windows 1 &&
        g --store "$1" --container ov --pid 5 --seed 17 --start $((o + 20000)) --windows 2
}
t0=$(date +%s%N); gen "$SQ"; rc=$?; diag "sqlite $((($(date +%s%N)-t0)/1000000)) ms"
okif $rc "the windows written to SQLite"
t0=$(date +%s%N); gen "$CH"; rc=$?; diag "ch $((($(date +%s%N)-t0)/1000000)) ms"
okif $rc "and the same to ClickHouse"

# serve STORE: starts it, sets $url (its base) and $ck (the token's cookie)
serve() {
    rm -f url.fifo
    mkfifo url.fifo
    "$FLAME" serve --store "$1" >url.fifo 2>>serve.err &
    srvs+=($!)
    local u
    read -r -t 60 u <url.fifo || return 1
    local port
    port=$(sed -E 's#^http://127\.0\.0\.1:([0-9]+)/.*#\1#' <<<"$u")
    url=http://127.0.0.1:$port
    ck="docker_flame_$port=${u#*token=}"
}
serve "$SQ" || bail "serve of SQLite did not start: $(cat serve.err)"
SQ_URL=$url SQ_CK=$ck
serve "$CH" || bail "serve of ClickHouse did not start: $(cat serve.err)"
CH_URL=$url CH_CK=$ck

# same NAME QUERY: the timeline's JSON of both stores the same (floats to 1e-9: the same sums
# added in another order)
same() {
    curl -sf -b "$SQ_CK" -o "sq.$1.json" "$SQ_URL/api/v1/timeline?$2" &&
        curl -sf -b "$CH_CK" -o "ch.$1.json" "$CH_URL/api/v1/timeline?$2"
    okif $? "$1: both answered"
    python3 - "sq.$1.json" "ch.$1.json" >"diff.$1" 2>&1 <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
bad = []
def cmp(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict) and x.keys() == y.keys():
        for k in x:
            cmp(x[k], y[k], path + "." + k)
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (p, q) in enumerate(zip(x, y)):
            cmp(p, q, "%s[%d]" % (path, i))
    elif isinstance(x, float) or isinstance(y, float):
        if not (isinstance(x, (int, float)) and isinstance(y, (int, float))
                and abs(x - y) <= 1e-9 * max(1.0, abs(x))):
            bad.append("%s: %r != %r" % (path, x, y))
    elif x != y:
        bad.append("%s: %r != %r" % (path, x, y)
                   if not isinstance(x, (list, dict)) else "%s: differs" % path)
cmp(a, b, "")
marks = sum(1 for m in a["marks"])
kinds = sorted(set(m["kind"] for m in a["marks"]))
print("series %d, buckets %d, marks %d %s" % (len(a["series"]), a["buckets"], marks, kinds))
for l in bad[:10]:
    print(l)
sys.exit(1 if bad else 0)
EOF
    local rc=$?
    okif $rc "$1: ClickHouse's timeline is SQLite's ($(head -1 "diff.$1"))"
    [ $rc -eq 0 ] || fdiag "$(cat "diff.$1")"
}
S=$(iso "$T")
U=$(iso $((T + 4 * H)))
same "whole, 1000 points" "since=$S&until=$U&width=1000"
same "whole, 60 points" "since=$S&until=$U&width=60"
same "whole, 10 points" "since=$S&until=$U&width=10"
same "a range that cuts windows" "since=$(iso $((T + 1234567)))&until=$(iso $((T + 7654321)))&width=400"
same "one container" "since=$S&until=$U&width=100&c=web"
same "wall" "since=$S&until=$U&width=100&type=wall"

# what the page marks, in this store: the gap, the compacted run, the restart, the recreated
# container (a check of the fixture: the comparison above must cover every kind)
python3 -c '
import json, sys
k = set(m["kind"] for m in json.load(open(sys.argv[1]))["marks"])
sys.exit(0 if k >= {"gap", "compacted", "restart", "recreated"} else 1)' "ch.whole, 60 points.json"
okif $? "the store has every kind of mark ($(head -1 "diff.whole, 60 points"))"
done_testing
