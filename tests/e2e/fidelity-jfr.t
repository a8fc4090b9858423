#!/usr/bin/env bash
# The fidelity check: on fixture JVMs that record JFR from their start (fixture
# variants jfr-interp, jfr), profile with `docker flame` for a window, stop the JVM (JFR dumps on
# exit), read its jdk.ExecutionSample events with the host JDK's `jfr print`, keep those of the
# same window, fold both sides to self time per Java method (fidelity-lib.sh says how like is
# compared with like) and compare: the top method must be the same, and the total variation
# distance must stay within the noise floor (TVD between the two halves of the JFR window) plus
# a margin that grows as samples get fewer (below). Before interpreted frames were named, the
# interpreted fixture's TVD was ~0.9 (its Java self time was all `Interpreter`). JDK 25: when
# the host has a Temurin 25 JDK (FIXTURE_JDK25, default /usr/lib/jvm/temurin-25-jdk-amd64), its
# fixture image is built and checked too. Figures: docs/BENCHMARKS.md "Interpreted frames".
# Whole stacks: inclusive time too -- the share of samples under each of JFR's 20
# busiest methods -- on JVMs with and without -XX:+PreserveFramePointer (variant jfr-nofp): the
# mean difference from JFR must stay within the halves' own plus a margin. Before the sidecar
# walked stacks itself, a JVM without the flag had its callers (FlameFixture.work,
# java.lang.Thread.run) in almost no stack: figures in docs/BENCHMARKS.md "Stack walking".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/fidelity-lib.sh"
real_plugin_setup
JDK17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
# Allowed: floor + 0.05 (the issue's goal) + 1.5/sqrt(n), n the smaller side's sample count:
# the halves' floor measures JFR's noise at n/2, not ours, and a loaded machine leaves fewer
# samples (at n = 350: +0.08; at n = 800: +0.05). Before interpreted frames were named the
# interpreted fixtures were at ~0.96. FIDELITY_MARGIN=X replaces the sample-count term.
# The interpreted fixtures get 0.08 more: on a host whose interpreter calls are slow, a sample
# taken while a call or return of the hot leaf (isPrime) is under way names the caller
# (countPrimes) as the leaf where JFR names the callee: 0.133-0.147 on one 2-core VM (13 % of
# the samples moved between those two), 0.03-0.1 elsewhere (docs/BENCHMARKS.md "Interpreted
# frames"). Still far under the ~0.9 of unnamed interpreted frames.
margin() { awk -v n="$1" -v m="${FIDELITY_MARGIN:-}" -v x="${2:-0}" 'BEGIN { printf "%.3f\n", 0.05 + x + (m != "" ? m : 1.5 / sqrt(n)) }'; }
# Inclusive: the halves' mean difference + 0.02 + 0.5/sqrt(n) (n as above: at n = 100, +0.07;
# at n = 800, +0.038). Before the walk, a JVM without the flag was at 0.115 (JDK 17) and
# 0.126 (JDK 25) against halves at 0.015-0.022: java.lang.Thread.run off by 1.0.
incl_margin() { awk -v n="$1" -v m="${FIDELITY_MARGIN:-}" 'BEGIN { printf "%.3f\n", 0.02 + (m != "" ? m : 0.5 / sqrt(n)) }'; }

# check_one LABEL VARIANT JDK [image]
check_one() {
    local label=$1 variant=$2 jdk=$3 image=${4:-}
    local fx t0 t1
    fx=$(FLAME_FIXTURE_IMAGE=${image:-flame-fixture-jvm:latest} fixture "$variant") || { nok "$label: fixture $variant did not start"; return; }
    t0=$(date +%s.%N)
    timeout -k 5 120 docker flame -d 8 --format folded -o "$label.folded" "$fx" 2>"$label.err"
    okif $? "$label: docker flame exit 0"
    t1=$(date +%s.%N)
    docker stop -t 20 "$fx" >/dev/null
    docker cp "$fx:/tmp/flame.jfr" "$label.jfr" 2>"$label.cp" || { nok "$label: no JFR recording ($(cat "$label.cp"))"; return; }
    "$jdk/bin/jfr" print --stack-depth 64 --events jdk.ExecutionSample "$label.jfr" >"$label.jfr.txt" 2>&1
    flame_self "$label.folded" >"$label.ours"
    jfr_self "$label.jfr.txt" "$t0" "$t1" >"$label.jfr.self"
    jfr_self "$label.jfr.txt" "$t0" "$t1" 1 >"$label.h1"
    jfr_self "$label.jfr.txt" "$t0" "$t1" 2 >"$label.h2"
    local n_ours n_jfr d floor top_o top_j
    n_ours=$(total "$label.ours") n_jfr=$(total "$label.jfr.self")
    d=$(tvd "$label.ours" "$label.jfr.self") floor=$(tvd "$label.h1" "$label.h2")
    top_o=$(top1 "$label.ours") top_j=$(top1 "$label.jfr.self")
    diag "$label: ours $n_ours Java samples, JFR $n_jfr; TVD $d, noise floor $floor; top $top_o / $top_j; top-10 overlap $(top10_overlap "$label.ours" "$label.jfr.self")/10"
    check "$label: enough samples on both sides ($n_ours, $n_jfr)" test "$n_ours" -ge 100 -a "$n_jfr" -ge 100
    is "$top_o" "$top_j" "$label: same top method as JFR"
    local m
    m=$(margin "$([ "$n_ours" -lt "$n_jfr" ] && echo "$n_ours" || echo "$n_jfr")" "$(case $variant in *interp) echo 0.08 ;; *) echo 0 ;; esac)")
    check "$label: TVD $d <= noise floor $floor + $m" awk -v d="$d" -v f="$floor" -v m="$m" 'BEGIN { exit !(d <= f + m) }'
    # inclusive time over JFR's 20 busiest methods: whole stacks, with or without the flag
    flame_incl "$label.folded" >"$label.incl"
    jfr_incl "$label.jfr.txt" "$t0" "$t1" >"$label.jfr.incl"
    jfr_incl "$label.jfr.txt" "$t0" "$t1" 1 >"$label.h1.incl"
    jfr_incl "$label.jfr.txt" "$t0" "$t1" 2 >"$label.h2.incl"
    local di dmax fi fmax
    read -r di dmax < <(incl_diff "$label.incl" "$label.jfr.incl")
    read -r fi fmax < <(incl_diff "$label.h1.incl" "$label.h2.incl")
    m=$(incl_margin "$([ "$n_ours" -lt "$n_jfr" ] && echo "$n_ours" || echo "$n_jfr")")
    diag "$label: inclusive shares vs JFR: mean difference $di (largest $dmax); JFR's halves $fi ($fmax)"
    check "$label: inclusive mean difference $di <= the halves' $fi + $m" awk -v d="$di" -v f="$fi" -v m="$m" 'BEGIN { exit !(d <= f + m) }'
    docker rm -f "$fx" >/dev/null
}

check_one jdk17-interp jfr-interp "$JDK17"
check_one jdk17-jit jfr "$JDK17"
check_one jdk17-nofp jfr-nofp "$JDK17"
if jdk25_fixture_image jfr; then
    check_one jdk25-interp jfr-interp "$JDK25" "$IMAGE25"
    check_one jdk25-nofp jfr-nofp "$JDK25" "$IMAGE25"
fi
done_testing
