#!/usr/bin/env bash
# The plugin keeps the engine's sidecar image in step with its tarball: a missing image is
# imported, and a stale one (same tag, another build: label com.docker-flame.tar-sha256 differs
# from build/flame-sidecar.tar.sha256) is replaced before profiling.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
ensure_fixture_image || bail "cannot build the fixture image"
plugin_env
want=$(cat "$BUILD/flame-sidecar.tar.sha256")
label() { docker image inspect -f '{{index .Config.Labels "com.docker-flame.tar-sha256"}}' "$SIDECAR_IMAGE" 2>/dev/null; }

fx=$(fixture pid1) || bail "fixture did not start"
# A stale image under our tag (what an upgrade without a VERSION bump would leave).
docker import --change "LABEL com.docker-flame.tar-sha256=0000000000000000" "$BUILD/flame-sidecar.tar" "$SIDECAR_IMAGE" >/dev/null
is "$(label)" 0000000000000000 "a stale sidecar image is in place"
out=$(docker flame "$fx" -d 2 -q -o "$TMP/a.svg" 2>&1); rc=$?
is "$rc" 0 "profiling with a stale image succeeds"; [ "$rc" = 0 ] || diag "$out"
is "$(label)" "$want" "the stale image was replaced by the current tarball"
check "the SVG was written" test -s "$TMP/a.svg"

docker rmi -f "$SIDECAR_IMAGE" >/dev/null 2>&1
out=$(docker flame "$fx" -d 2 -q -o "$TMP/b.svg" 2>&1); rc=$?
is "$rc" 0 "profiling with no image on the engine succeeds"; [ "$rc" = 0 ] || diag "$out"
is "$(label)" "$want" "the missing image was imported with its identity"
done_testing
