#!/usr/bin/env bash
# `docker flame host` figures (docs/BENCHMARKS.md "docker flame host"), on the engine
# of DOCKER_HOST with the plugin installed (tests/e2e/lib.sh plugin_env does that for tests):
#   1. tool overhead of `host -d 10` beyond the duration, with 8 running containers (4 fixture
#      JVMs, which get the agent, at --cpus 0.1 each, and 4 idle ones), median of ROUNDS runs;
#   2. post-processing cost per 100k samples: one `host -d 10 -F 2000` run, the sidecar's
#      perf script + fold time and the plugin's rows + outputs time, scaled to 100k samples.
# Needs the fixture image (tests/fixtures/build.sh) and the sidecar image. Run: make bench-host
set -euo pipefail
ROUNDS=${ROUNDS:-3}
J=/opt/java/openjdk/bin/java
owner="bench-host-$$"
cleanup() { docker rm -f $(docker ps -aq --filter "label=bench-host=$owner") >/dev/null 2>&1 || true; }
trap cleanup EXIT
for i in 1 2 3 4; do
    docker run -d --network none --label "bench-host=$owner" --cpus 0.1 flame-fixture-jvm:latest \
        "$J" -XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app FlameFixture >/dev/null
    docker run -d --network none --label "bench-host=$owner" flame-fixture-jvm:latest /init --pause >/dev/null
done
sleep 3 # the JVMs' start-up (a settle time for a figure, not a synchronisation)
echo "containers running: $(docker ps -q --filter "label=bench-host=$owner" | wc -l)"
over=()
for ((r = 1; r <= ROUNDS; r++)); do
    t0=$(date +%s.%N)
    DOCKER_FLAME_TIMINGS=1 docker flame host -q -d 10 --format folded -o /dev/null >/dev/null 2>"${TMPDIR:-/tmp}/bench-host.err"
    t1=$(date +%s.%N)
    o=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a - 10 }')
    over+=("$o")
    echo "round $r: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }') s, overhead beyond 10 s: $o s; $(grep -o 'host timings: .*' "${TMPDIR:-/tmp}/bench-host.err")"
done
echo "overhead beyond the duration (median of $ROUNDS): $(printf '%s\n' "${over[@]}" | sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}') s"
DOCKER_FLAME_TIMINGS=1 docker flame host -q -d 10 -F 2000 --format folded -o /dev/null >/dev/null 2>"${TMPDIR:-/tmp}/bench-host.err"
line=$(grep -o 'host timings: .*' "${TMPDIR:-/tmp}/bench-host.err")
echo "high-rate run: $line"
echo "$line" | awk '{
    for (i = 1; i <= NF; i++) { if ($i == "script+fold") sf = $(i + 1); if ($i == "rows+outputs") po = $(i + 1); if ($i == "samples") n = $(i + 1) }
    sub(/,/, "", n); if (n > 0) printf "post-processing per 100k samples: sidecar perf script + fold %.0f ms, plugin %.0f ms (%d samples)\n", sf * 100000 / n, po * 100000 / n, n }'
rm -f "${TMPDIR:-/tmp}/bench-host.err"
