#!/usr/bin/env bash
# Whole stacks (docs/BENCHMARKS.md "Stack walking"): for each fixture JVM (JDK 17 and, when
# present, Temurin 25; started with and without -XX:+PreserveFramePointer) and each sampling
# (per CPU, per thread), profile SECS seconds (default 20) and print:
#   samples   the worker thread's samples (FlameFixture's "worker-1")
#   whole     of them, whole stacks: java.lang.Thread.run under the VM's thread start and the
#             call stub, the workload's methods under their callers (tests/e2e/walk.t's rule)
#   root      the summary's walk counts: walks that reached the thread's root, of all walks
#   cut       walks cut by the stack's reading or depth bound (--summary-json walk.cut)
#   other     the other walk statuses with their counts (--summary-json walk.status)
#   rec_us    the recorder's rewrite per sample (walk + names; its `--debug` stats line)
#   script_us perf script + folding per sample (--summary-json sidecar_timings_ms.script)
# Needs a Docker engine (DOCKER_HOST / FLAME_ENGINE_DIR as for the e2e tests) and `make`.
#   bench/walk-root.sh [SECS]
set -euo pipefail
. "$(dirname "$0")/../tests/e2e/lib.sh"
secs=${1:-20}
ensure_fixture_image && ensure_sidecar_image && plugin_env
cd "$TMP"
JDK25=${FIXTURE_JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
images=("17 flame-fixture-jvm:latest")
if [ -x "$JDK25/bin/jlink" ]; then
    FIXTURE_JDK=$JDK25 FLAME_FIXTURE_IMAGE=flame-fixture-jvm25:latest "$ROOT/tests/fixtures/build.sh" >/dev/null
    images+=("25 flame-fixture-jvm25:latest")
fi
whole() {
    awk '$0 ~ /^worker-/ { n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s); gsub(/_\[[a-z]+\]/, "", s)
        if (s !~ /^worker-[0-9]+;([^;]*;)?start_thread;.*;call_stub;java\.lang\.Thread\.run;/) next
        if (s ~ /FlameFixture\.countPrimes/ && s !~ /FlameFixture\.work;FlameFixture\.countPrimes/) next
        if (s ~ /FlameFixture\.mixHashes/ && s !~ /FlameFixture\.work;FlameFixture\.mixHashes/) next
        r += n } END { printf "%d %d\n", r, t }' "$1"
}
printf '%-8s %-6s %-7s %8s %14s %16s %6s %8s %10s  %s\n' jdk flag sampling samples whole root cut rec_us script_us other
for im in "${images[@]}"; do
    read -r v image <<<"$im"
    for variant in nofp pid1; do
        fx=$(FLAME_FIXTURE_IMAGE=$image fixture "$variant")
        for sampling in cpu thread; do
            docker --debug flame -d "$secs" --sampling "$sampling" --format folded -o w.folded \
                --summary-json w.json "$fx" 2>w.err || { echo "docker flame failed: $(tail -1 w.err)" >&2; continue; }
            read -r r t < <(whole w.folded)
            read -r root walks cut script samples other < <(python3 -c '
import json, sys
c = json.load(open("w.json"))["containers"][0]
w = c.get("walk") or {}
st = ",".join("%s=%d" % (k, v) for k, v in sorted((w.get("status") or {}).items()) if v and k != "root")
print(w.get("root", 0), w.get("walks", 0), w.get("cut", 0),
      c.get("sidecar_timings_ms", {}).get("script", 0), c.get("samples") or 0, st or "-")')
            # per CPU: the stats line's samples= and walk_us= (the whole rewrite); per thread:
            # the walk line's samples= and rewrite_us=
            if grep -aq 'recorder: interpreted:' w.err; then
                rec=$(grep -a 'recorder: interpreted:' w.err | tail -1 | tr ' ' '\n' | sed -n 's/^\(samples\|walk_us\)=//p' | paste -sd' ')
            else
                rec=$({ grep -a 'recorder: walk:' w.err || true; } | tail -1 | tr ' (' '\n\n' | sed -n 's/^\(samples\|rewrite_us\)=//p' | paste -sd' ')
            fi
            read -r rs rus <<<"${rec:-0 0}"
            printf '%-8s %-6s %-7s %8d %14s %16s %6d %8s %10s  %s\n' "jdk$v" "$([ "$variant" = pid1 ] && echo with || echo without)" \
                "$sampling" "$t" "$r ($(awk -v r="$r" -v t="$t" 'BEGIN { printf "%.1f%%", t ? 100 * r / t : 0 }'))" \
                "$root/$walks" "$cut" "$(awk -v u="$rus" -v s="$rs" 'BEGIN { printf "%.1f", s ? u / s : 0 }')" \
                "$(awk -v ms="$script" -v s="$samples" 'BEGIN { printf "%.1f", s ? 1000 * ms / s : 0 }')" "$other"
        done
        docker rm -f "$fx" >/dev/null
    done
done
