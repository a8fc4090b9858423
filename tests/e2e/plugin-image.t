#!/usr/bin/env bash
# The plugin keeps the engine's sidecar image in step with its tarball: a missing image is
# imported, and a stale one (same tag, another build: label com.docker-flame.tar-sha256 differs
# from build/flame-sidecar.tar.sha256) is replaced before profiling; two commands that find it
# missing at the same moment leave one image, not an untagged copy; the sidecar is created from
# the image id that was checked, not from the tag.
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

# Pinned: the sidecar is created from the image id the plugin checked (its Config.Image), so a
# tag moved meanwhile cannot hand the run another build.
id=$(docker image inspect -f '{{.Id}}' "$SIDECAR_IMAGE")
docker flame "$fx" -d 4 -q -o "$TMP/p.svg" >/dev/null 2>&1 &
prof=$!
sc=
wait_until 30 eval 'sc=$(docker ps -q --filter label=com.docker-flame.sidecar=1 --filter "label=com.docker-flame.target=$(docker inspect -f {{.Id}} "$fx")" | head -1); [ -n "$sc" ]'
is "$(docker inspect -f '{{.Config.Image}}' "$sc" 2>/dev/null)" "$id" "the sidecar is created from the checked image's id"
wait "$prof"

# Two commands that find the image missing at the same moment (the first `record web api` on an
# engine: one recorder per container) each import it; one image stays, tagged, and no untagged
# copy (~36 MB) is left.
# (other tests' images, e.g. top-lib.sh's docker-flame-sidecar:top-<hash>, may carry this build's
# label too: only untagged copies count)
untagged() { docker images -aq --no-trunc --filter dangling=true --filter "label=com.docker-flame.tar-sha256" | sort -u | wc -l; }
fx2=$(fixture pid1) || bail "fixture did not start"
for round in 1 2; do
    docker rmi -f "$SIDECAR_IMAGE" >/dev/null 2>&1
    before=$(untagged)
    docker flame "$fx" -d 1 -q -o "$TMP/c1.svg" >"$TMP/c1.out" 2>&1 &
    p1=$!
    docker flame "$fx2" -d 1 -q -o "$TMP/c2.svg" >"$TMP/c2.out" 2>&1 &
    p2=$!
    wait "$p1"; r1=$?
    wait "$p2"; r2=$?
    is "$r1 $r2" "0 0" "round $round: two first runs at once both succeed"; [ "$r1$r2" = 00 ] || diag "$(cat "$TMP/c1.out" "$TMP/c2.out")"
    is "$(label)" "$want" "round $round: the image is tagged, with its identity"
    is "$(untagged)" "$before" "round $round: no untagged copy of the sidecar image left"
done
done_testing
