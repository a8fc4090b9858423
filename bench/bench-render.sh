#!/bin/sh
# bench-render: `docker flame render` on 100k and 1M unique folded stacks, against flamegraph.pl's
# figures recorded in docs/BENCHMARKS.md, "Reference figures" (flamegraph.pl is not on this machine: the
# ratios compare with those recorded numbers, measured on the same machine kind).
# Prints time, peak RSS, SVG size (default minwidth; default embed limit, --no-embed and
# --embed-limit 0), the number of frames drawn, the time to read our own SVG back, and the
# speedscope and pprof exports' time, memory and size.
# Not a pass/fail test.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/build/bench
mkdir -p "$OUT"
GEN=$ROOT/bench/gen_synthetic_inputs.py
PL_100K_S=11.9 PL_100K_MB=660 PL_1M_S=117.6 PL_1M_MB=5500
GOAL_100K_S=0.5 GOAL_1M_S=3 GOAL_1M_MB=1024

# The standalone renderer: flame_cmd_render() linked against the release core library.
cat >"$OUT/render-driver.c" <<'EOF'
#include "plugin/cmd.h"
int main(int argc, char **argv) { return flame_cmd_render(argc, argv); }
EOF
DRIVER=$OUT/render
make -s build/libflamecmd.a build/libflamecore.a >/dev/null || { echo "bench: the build failed (make)" >&2; exit 1; }
cc -O2 -D_GNU_SOURCE -I. -o "$DRIVER" "$OUT/render-driver.c" build/libflamecmd.a build/libflamecore.a -lm -lpthread -lz

# measure OUTFILE CMD...: wall time (s), peak RSS (MB) and CPU time (s) of one run: "T M C".
measure() {
    out=$1
    shift
    python3 - "$out" "$@" <<'EOF'
import resource, subprocess, sys, time
out = sys.argv[1]
t = time.monotonic()
with open(out, "wb") as f:
    rc = subprocess.call(sys.argv[2:], stdout=f)
dt = time.monotonic() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
if rc:
    sys.exit("command failed: %d" % rc)
print("%.2f %.0f %.2f" % (dt, ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime))
EOF
}

ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%.1fx' % (a / b if b else 0))" "$1" "$2"; }
mb() { python3 -c "import os, sys; print('%.1f' % (os.path.getsize(sys.argv[1]) / 1e6))" "$1"; }
less() { python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$1" "$2"; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) (2 cores; wall times grow with it, CPU times less)"
for N in 100000 1000000; do
    IN=$OUT/folded-$N.txt
    if [ ! -s "$IN" ]; then
        echo "generating $N unique folded stacks (once)..."
        PYTHONHASHSEED=0 python3 "$GEN" folded "$N" "$IN.tmp"
        mv "$IN.tmp" "$IN"
    fi
    cat "$IN" >/dev/null # warm the page cache: measure rendering, not the disk
    SVG=$OUT/render-$N.svg
    best=""
    for i in 1 2 3; do
        r=$(measure "$SVG" "$DRIVER" "$IN")
        if [ -z "$best" ] || less "${r%% *}" "${best%% *}"; then best=$r; fi
    done
    set -- $best
    t=$1 m=$2 cpu=$3
    r2=$(measure "$OUT/render-$N-noembed.svg" "$DRIVER" --no-embed "$IN")
    r4=$(measure "$OUT/render-$N-full.svg" "$DRIVER" --embed-limit 0 "$IN")
    r3=$(measure "$OUT/render-$N.folded" "$DRIVER" --format folded "$OUT/render-$N-full.svg")
    frames=$(grep -c '^<g data-s=' "$SVG" || true)
    if grep -q '^<metadata id="docker-flame-data"' "$SVG"; then emb="data embedded"
    else emb="data over the 32 MB embed limit: left out"; fi
    if cmp -s "$OUT/render-$N.folded" "$IN"; then rt="identical"; else rt="DIFFERENT"; fi
    if [ "$N" = 100000 ]; then pls=$PL_100K_S plm=$PL_100K_MB goal="<= $GOAL_100K_S s"
    else pls=$PL_1M_S plm=$PL_1M_MB goal="<= $GOAL_1M_S s, <= $GOAL_1M_MB MB"; fi
    echo "render $N unique stacks ($(mb "$IN") MB folded): $t s ($cpu s CPU), $m MB RSS (best of 3; goal $goal)"
    echo "  vs flamegraph.pl ($pls s, $plm MB): $(ratio "$pls" "$t") faster, $(ratio "$plm" "$m") less memory"
    echo "  SVG at default minwidth 0.1 px: $(mb "$SVG") MB ($emb), $frames frames drawn"
    echo "  --no-embed: $(mb "$OUT/render-$N-noembed.svg") MB (${r2%% *} s);" \
         "--embed-limit 0: $(mb "$OUT/render-$N-full.svg") MB (${r4%% *} s)"
    set -- $r3
    echo "  read back the --embed-limit 0 SVG -> folded: $1 s, $2 MB RSS; round trip $rt"
    set -- $(measure "$OUT/render-$N.speedscope.json" "$DRIVER" --format speedscope "$IN")
    echo "  --format speedscope: $1 s, $2 MB RSS, $(mb "$OUT/render-$N.speedscope.json") MB"
    set -- $(measure "$OUT/render-$N.pb.gz" "$DRIVER" --format pprof "$IN")
    echo "  --format pprof: $1 s, $2 MB RSS, $(mb "$OUT/render-$N.pb.gz") MB (gzip'd profile.proto)"
done

# How long a browser takes to open the graphs (needs chromium and npm ci --prefix tests/browser).
if [ -d tests/browser/node_modules/playwright-core ] && command -v chromium >/dev/null 2>&1; then
    echo "headless chromium:"
    node tests/browser/open-time.js "$OUT/render-100000.svg" "$OUT/render-1000000.svg" \
        "$OUT/render-1000000-full.svg" | sed 's/^/  /'
else
    echo "(browser open time not measured: needs chromium and npm ci --prefix tests/browser)"
fi
