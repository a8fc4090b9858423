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
# stale LABEL: import the tarball under our tag as another build; the image the tag pointed
# at is removed (it would stay untagged: the test's leftover, not the plugin's).
stale() {
    local cur; cur=$(docker image inspect -f '{{.Id}}' "$SIDECAR_IMAGE" 2>/dev/null)
    docker import --change "LABEL com.docker-flame.tar-sha256=$1" "$BUILD/flame-sidecar.tar" "$SIDECAR_IMAGE" >/dev/null
    [ -z "$cur" ] || docker rmi "$cur" >/dev/null 2>&1 || true
}

# A stale image under our tag (what an upgrade without a VERSION bump would leave).
stale 0000000000000000
is "$(label)" 0000000000000000 "a stale sidecar image is in place"
old=$(docker image inspect -f '{{.Id}}' "$SIDECAR_IMAGE")
out=$(docker flame "$fx" -d 2 -q -o "$TMP/a.svg" 2>&1); rc=$?
is "$rc" 0 "profiling with a stale image succeeds"; [ "$rc" = 0 ] || diag "$out"
is "$(label)" "$want" "the stale image was replaced by the current tarball"
check "the SVG was written" test -s "$TMP/a.svg"
# Replaced, the old build would be an untagged ~36 MB image that nothing removes (one per
# upgrade): the plugin removes it.
check "the image it replaced is removed, not left untagged" eval "! docker image inspect '$old' >/dev/null 2>&1"

# ... unless something still uses it (here a created container; in life, a detached recording's
# sidecar of the old build): then the engine refuses, it stays, and nothing is said about it.
stale 0000000000000001
old=$(docker image inspect -f '{{.Id}}' "$SIDECAR_IMAGE")
user=$(docker create --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" "$old" /flame-sidecar)
out=$(docker flame "$fx" -d 1 -q -o "$TMP/c.svg" 2>&1); rc=$?
is "$rc" 0 "a stale image still used by a container: profiling succeeds"; [ "$rc" = 0 ] || diag "$out"
is "$out" "" "... and says nothing (-q)"
is "$(label)" "$want" "... the tag points at the current build"
check "... the used old image stays" docker image inspect "$old"
docker rm -f "$user" >/dev/null && docker rmi "$old" >/dev/null

docker rmi -f "$SIDECAR_IMAGE" >/dev/null 2>&1
out=$(docker flame "$fx" -d 2 -q -o "$TMP/b.svg" 2>&1); rc=$?
is "$rc" 0 "profiling with no image on the engine succeeds"; [ "$rc" = 0 ] || diag "$out"
is "$(label)" "$want" "the missing image was imported with its identity"
done_testing
