#!/usr/bin/env bash
# Fidelity figures (docs/BENCHMARKS.md "Interpreted frames"): for each fixture JVM
# (JDK 17 and, when present, Temurin 25; interpreted hot path and JIT), profile with docker flame
# for SECS (default 10) while the JVM records JFR, then print: samples, the share of samples with
# an unnamed `Interpreter` frame before (every _[int] frame turned back into `Interpreter`, which
# is exactly what the recorder emitted before interpreted frames were named) and now, TVD against
# JFR before and now, the noise floor (TVD between the JFR window's two halves), the top method on
# each side.
# Needs a Docker engine (DOCKER_HOST / FLAME_ENGINE_DIR as for the e2e tests), `make`, and the
# plugin in DOCKER_CONFIG (the e2e lib's plugin_env is reused).
#   bench/fidelity.sh [SECS]
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"
. "$ROOT/tests/e2e/fidelity-lib.sh"
secs=${1:-10}
ensure_fixture_image && ensure_sidecar_image && plugin_env
cd "$TMP"
JDK17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
JDK25=${FIXTURE_JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
runs=("17 jfr-interp $JDK17 flame-fixture-jvm:latest" "17 jfr $JDK17 flame-fixture-jvm:latest")
if [ -x "$JDK25/bin/jfr" ]; then
    FIXTURE_JDK=$JDK25 FLAME_FIXTURE_IMAGE=flame-fixture-jvm25:latest "$ROOT/tests/fixtures/build.sh" >/dev/null
    runs+=("25 jfr-interp $JDK25 flame-fixture-jvm25:latest" "25 jfr $JDK25 flame-fixture-jvm25:latest")
fi
printf '%-16s %7s %14s %13s %10s %9s %7s %6s  %s\n' fixture samples unnamed_before unnamed_after tvd_before tvd_after floor top10 "top (ours / JFR)"
for r in "${runs[@]}"; do
    read -r v variant jdk image <<<"$r"
    fx=$(FLAME_FIXTURE_IMAGE=$image fixture "$variant")
    t0=$(date +%s.%N)
    docker flame -d "$secs" -q --format folded -o a.folded "$fx" 2>/dev/null
    t1=$(date +%s.%N)
    docker stop -t 20 "$fx" >/dev/null && docker cp "$fx:/tmp/flame.jfr" a.jfr && docker rm -f "$fx" >/dev/null
    "$jdk/bin/jfr" print --events jdk.ExecutionSample a.jfr >a.txt
    sed -E 's/[^;]*_\[int\]/Interpreter/g' a.folded >b.folded # what the output was before
    flame_self a.folded >ours; flame_self b.folded >before
    jfr_self a.txt "$t0" "$t1" >jfr; jfr_self a.txt "$t0" "$t1" 1 >h1; jfr_self a.txt "$t0" "$t1" 2 >h2
    share() { awk '{ n = $NF; t += n; if ($0 ~ /(^|;)Interpreter(;| )/) u += n } END { printf "%.1f%%", t ? 100 * u / t : 0 }' "$1"; }
    printf '%-16s %7s %14s %13s %10s %9s %7s %6s  %s / %s\n' "jdk$v-$variant" "$(awk '{ t += $NF } END { print t }' a.folded)" \
        "$(share b.folded)" "$(share a.folded)" "$(tvd before jfr)" "$(tvd ours jfr)" "$(tvd h1 h2)" \
        "$(top10_overlap ours jfr)/10" "$(top1 ours)" "$(top1 jfr)"
done
