#!/usr/bin/env bash
# Native frames named (docs/BENCHMARKS.md "Native frames"), on the engine of DOCKER_HOST
# with the plugin installed (tests/e2e/lib.sh plugin_env does that for tests): for fixture
# VARIANT (default native), ROUNDS runs of `docker flame -d 5` each with this build's sidecar and,
# when OLD_TAR names an older sidecar tarball, with that one ("before"): the share of samples
# with an unnamed native frame (`[lib...]`), the sidecar's finish and perf script times (the
# copies, the debug-file checks, and perf loading more symbols), and what is copied (the
# executable-mapped ELF files of the JVM, read from the host's /proc: run as root).
# Usage: [OLD_TAR=old/flame-sidecar.tar] [ROUNDS=3] bench/native-names.sh [VARIANT]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
variant=${1:-native}
ROUNDS=${ROUNDS:-3}
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-native.XXXXXX")
fx=$(FLAME_TEST_OWNER="bench-native-$$" "$here/../tests/fixtures/run.sh" "$variant")
cleanup() { docker rm -f "$fx" >/dev/null 2>&1 || true; rm -rf "$out"; }
trap cleanup EXIT
sides=(new); [ -n "${OLD_TAR:-}" ] && sides=(old new)
for ((r = 1; r <= ROUNDS; r++)); do
    for v in "${sides[@]}"; do
        if [ "$v" = old ]; then
            export DOCKER_FLAME_SIDECAR_TAR=$OLD_TAR DOCKER_FLAME_SIDECAR_IMAGE=docker-flame-sidecar:bench-old
        else
            unset DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_IMAGE
        fi
        docker flame -d 5 -q --format folded -o "$out/f" --summary-json "$out/j" "$fx" 2>/dev/null
        t=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['containers'][0]['sidecar_timings_ms']; print(c['finish'], c['script'])" "$out/j")
        s=$(awk '{ t += $NF; if ($0 ~ /(^|;)\[lib[^];]*\](;| )/) u += $NF } END { printf "%d %.1f", t, t ? 100 * u / t : 0 }' "$out/f")
        echo "round $r $v: samples ${s% *}, with an unnamed native frame ${s#* } %, sidecar finish/script ms: $t"
    done
done
pid=$(docker inspect -f '{{.State.Pid}}' "$fx")
awk '$2 ~ /x/ && $6 ~ /^\// { print $1 }' "/proc/$pid/maps" | while read -r range; do
    f=/proc/$pid/map_files/$range
    head -c4 "$f" | grep -q ELF && stat -L -c '%s %i' "$f"
done | sort -u -k2 | awk '{ b += $1; n++ } END { printf "copied: %d ELF files, %.1f MiB (+ debug files the image ships)\n", n, b / 1048576 }'
