#!/bin/sh
# bench-fold: how fast `docker flame fold` folds perf script text, against stackcollapse-perf.pl's
# figures recorded in docs/BENCHMARKS.md, "Reference figures" (the Perl scripts are not on this machine, so
# the comparison is with those recorded numbers, measured on the same machine kind).
# Prints figures and ratios; not a pass/fail test. Run from anywhere: `make bench` or directly.
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=$ROOT/build/bench
mkdir -p "$OUT"
GEN=$ROOT/bench/gen_synthetic_inputs.py
PERL_1M=3.9      # s, stackcollapse-perf.pl on the 1M-line synthetic perf script
PERL_1M_ALL=6.3  # s, the same with --all
PERL_PER_MSAMPLE=68 # s per million real Java samples

# 1. Our driver: flame_cmd_fold() as the plugin calls it, linked against the release core lib.
cat >"$OUT/fold-driver.c" <<'EOF'
#include "plugin/cmd.h"
int main(int argc, char **argv) { return flame_cmd_fold(argc, argv); }
EOF
DRIVER=$OUT/fold
make -s build/libflamecmd.a build/libflamecore.a >/dev/null || { echo "bench: the build failed (make)" >&2; exit 1; }
cc -O2 -D_GNU_SOURCE -I. -o "$DRIVER" "$OUT/fold-driver.c" build/libflamecmd.a build/libflamecore.a -lm -lpthread -lz

# 2. Inputs.
SYN=$OUT/perfscript-1m.txt
if [ ! -s "$SYN" ]; then
    echo "generating the 1M-line synthetic perf script (once, ~20 s)..."
    PYTHONHASHSEED=0 python3 "$GEN" perfscript 1000000 "$SYN.tmp"
    mv "$SYN.tmp" "$SYN"
fi
JDK=$ROOT/tests/data/stackcollapse/inputs/perf-jdk17-container-work.txt

# best of 3: prints "wall cpu rss_kb" (cpu = user + sys), input from the page cache
best3() {
    cat "$@" >/dev/null 2>&1 || true
    best=""
    for _ in 1 2 3; do
        /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$DRIVER" "$@" >"$OUT/folded.txt"
        set -- "$@" # keep args
        r=$(awk '{printf "%.3f %.3f %d\n", $1, $2 + $3, $4}' "$OUT/time.txt")
        if [ -z "$best" ] || awk -v a="$r" -v b="$best" 'BEGIN{split(a,x," ");split(b,y," ");exit !(x[1]<y[1])}'; then
            best=$r
        fi
    done
    echo "$best"
}

report() { # name input perl_seconds wall cpu rss
    awk -v name="$1" -v bytes="$(wc -c <"$2")" -v lines="$(wc -l <"$2")" -v perl="$3" \
        -v wall="$4" -v cpu="$5" -v rss="$6" -v stacks="$(wc -l <"$OUT/folded.txt")" 'BEGIN {
        w = wall > 0 ? wall : 0.001; c = cpu > 0 ? cpu : 0.001
        printf "%s: %.1f MB, %d lines -> %d stacks\n", name, bytes / 1e6, lines, stacks
        if (wall < 0.01) {
            printf "  best of 3: < 0.01 s (below /usr/bin/time resolution); peak RSS %.1f MB\n", rss / 1024
            exit
        }
        printf "  best of 3: %.3f s wall, %.3f s CPU; %.2f M lines/s, %.0f MB/s (wall); peak RSS %.1f MB\n",
            wall, cpu, lines / w / 1e6, bytes / w / 1e6, rss / 1024
        if (perl > 0)
            printf "  vs stackcollapse-perf.pl (recorded %.1f s): %.1fx wall, %.1fx CPU (target >= 20x)\n",
                perl, perl / w, perl / c
    }'
}

echo "fold driver: $DRIVER; machine load: $(cut -d' ' -f1-3 /proc/loadavg)"
if command -v stackcollapse-perf.pl >/dev/null 2>&1; then
    echo "note: stackcollapse-perf.pl is installed, but the ratios below use the recorded figures"
else
    echo "note: stackcollapse-perf.pl is not on this machine: ratios use its recorded figures (docs/BENCHMARKS.md)"
fi
if awk -v l="$(cut -d' ' -f1 /proc/loadavg)" -v n="$(nproc)" 'BEGIN{exit !(l > n)}'; then
    echo "note: the machine is busy (load > $(nproc) cores): wall times are inflated, CPU times are the fair figure"
fi
[ -x /usr/bin/time ] || { echo "bench-fold: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
set -- $(best3 "$SYN"); report "1M-line synthetic, default" "$SYN" "$PERL_1M" "$1" "$2" "$3"
set -- $(best3 --compat "$SYN"); report "1M-line synthetic, --compat" "$SYN" "$PERL_1M" "$1" "$2" "$3"
set -- $(best3 --compat --all "$SYN"); report "1M-line synthetic, --compat --all" "$SYN" "$PERL_1M_ALL" "$1" "$2" "$3"
samples=$(grep -c '^[^[:space:]#]' "$JDK" || true)
# One capture is ~1 ms of work: fold it 100 times over (one stream) to get a measurable figure.
JDK100=$OUT/jdk17-x100.txt
if [ ! -s "$JDK100" ]; then
    for _ in $(seq 100); do cat "$JDK"; done >"$JDK100"
fi
perl_jdk=$(awk -v s="$samples" -v r="$PERL_PER_MSAMPLE" 'BEGIN{printf "%.3f", s * 100 / 1e6 * r}')
set -- $(best3 "$JDK"); report "real JDK 17 capture, once ($samples samples)" "$JDK" 0 "$1" "$2" "$3"
set -- $(best3 "$JDK100")
report "real JDK 17 capture x100 ($((samples * 100)) samples)" "$JDK100" "$perl_jdk" "$1" "$2" "$3"
echo "  (the Perl figure here is an estimate: the recorded ${PERL_PER_MSAMPLE} s per million Java samples)"
