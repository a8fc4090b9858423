#!/usr/bin/env bash
# Output faults through the real `docker flame` + real sidecar: a read-only, missing or
# pseudo-filesystem (/proc) output dir, and another user's link planted at the output name in a
# sticky world-writable dir, fail before anything is started; a full disk (a 4 KiB tmpfs mounted
# here) keeps the profile by saving it to a new randomly named file in $TMPDIR (never the bare
# name, where a link may wait), says both paths in one line, exit 1, no temp file left; both
# full: exit 1, nothing left anywhere. The target is untouched after each.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
[ -f "$BUILD/flame-sidecar.tar" ] || { skip_or_fail "build/flame-sidecar.tar missing (make)"; done_testing; }
[ "$(id -u)" = 0 ] || { skip_or_fail "needs root (mounts a tmpfs)"; done_testing; }
ensure_fixture_image || bail "cannot build the fixture image"
ensure_sidecar_image || bail "cannot import the sidecar image"
plugin_env
unset DOCKER_FLAME_SIDECAR_IMAGE DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_CAPS DOCKER_FLAME_SIDECAR_TEST_STOP
cd "$TMP"
T="timeout -k 10 120"
mkdir ro full full2 alt
mount -t tmpfs -o ro,size=4k flame-test-ro ro || bail "cannot mount a tmpfs"
mount -t tmpfs -o size=4k flame-test-full full
mount -t tmpfs -o size=4k flame-test-full2 full2
trap 'umount "$TMP/ro" "$TMP/full" "$TMP/full2" 2>/dev/null; _cleanup' EXIT

fx=$(fixture pid1) || bail "fixture pid1 did not start"
hp=$(host_pid "$fx")
m0=$(flame_mounts "$hp")
target_ok() {
    check "$1: the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
    is "$(sidecars_left)" 0 "$1: no sidecar left"
    is "$(flame_mounts "$hp")" "$m0" "$1: no docker-flame mount left in the target"
}

# read-only output dir: refused before a sidecar is created
s=$(date +%s%N)
$T docker flame -d 5 -o ro/p.svg "$fx" 2>ro.err; rc=$?
ms=$(( ($(date +%s%N) - s) / 1000000 ))
is "$rc" 1 "read-only dir: exit 1"
like "$(cat ro.err)" '^docker flame: cannot write to ro \(choose another -o\): Read-only file system$' "read-only dir: one clear line"
is "$(wc -l < ro.err)" 1 "read-only dir: only that line"
check "read-only dir: refused at once (${ms} ms < 5 s), no profile taken" test "$ms" -lt 5000
target_ok "read-only dir"

# missing output dir: same
$T docker flame -d 5 -o nosuch/p.svg "$fx" 2>no.err; rc=$?
is "$rc" 1 "missing dir: exit 1"
like "$(cat no.err)" 'cannot write to nosuch .*No such file or directory' "missing dir: clear line"

# a pseudo-filesystem: access() says yes, but nothing can be created there
$T docker flame -d 5 -o /proc/x.svg "$fx" 2>proc.err; rc=$?
is "$rc" 1 "-o /proc/x.svg: exit 1"
like "$(cat proc.err)" '^docker flame: cannot write to /proc \(choose another -o\)' "-o /proc/x.svg: refused before profiling"
is "$(wc -l < proc.err)" 1 "-o /proc/x.svg: only that line"

# another user's link planted at the output name in a sticky world-writable dir (/tmp): not
# followed (the kernel's protected_symlinks rule, even with the sysctl off), refused before
# anything starts; the file it names untouched
mkdir sticky && chmod 1777 sticky
echo secret >victim
ln -s "$TMP/victim" sticky/web.svg && chown -h 65534:65534 sticky/web.svg
s=$(date +%s%N)
$T docker flame -d 5 -o sticky/web.svg "$fx" 2>link.err; rc=$?
ms=$(( ($(date +%s%N) - s) / 1000000 ))
is "$rc" 1 "planted link: exit 1"
like "$(cat link.err)" '^docker flame: will not write sticky/web.svg: it is a symbolic link owned by another user \(uid 65534\)' "planted link: one clear line"
is "$(cat victim)" secret "planted link: the file it names is untouched"
check "planted link: refused at once (${ms} ms < 5 s)" test "$ms" -lt 5000
check "planted link: still the same link" test "$(readlink sticky/web.svg)" = "$TMP/victim"

# disk full: the profile is saved to a new file in $TMPDIR instead; a link planted at the bare
# name there is never touched
ln -s "$TMP/victim" alt/p.svg
TMPDIR=$TMP/alt $T docker flame -d 2 -o full/p.svg "$fx" 2>full.err; rc=$?
is "$rc" 1 "disk full: exit 1"
like "$(grep -E '^docker flame: .*(cannot|error)' full.err)" "cannot write full/p.svg.*No space left on device; the profile was saved to $TMP/alt/p-[A-Za-z0-9]{6}\.svg instead" "disk full: one line naming both paths"
is "$(grep -Ec '^docker flame: .*(cannot|error)' full.err)" 1 "disk full: exactly one error line"
saved=$(ls alt/p-??????.svg 2>/dev/null | head -1)
like "$(cat "$saved" 2>/dev/null)" 'FlameFixture\.countPrimes' "disk full: saved SVG has the Java names"
check "disk full: the saved SVG is complete XML" python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse('$saved')"
is "$(stat -c %a "$saved" 2>/dev/null)" 600 "disk full: the saved file is private (0600)"
is "$(cat victim)" secret "disk full: the link at the bare name \$TMPDIR/p.svg was not followed"
is "$(ls -A full | wc -l)" 0 "disk full: no temp file left in the full dir"
like "$(cat full.err)" "wrote .*$saved" "disk full: the summary names the saved file"
target_ok "disk full"

# both full: nothing can be saved; exit 1, nothing left
TMPDIR=$TMP/full2 $T docker flame -d 2 --format svg --format folded -o full/q.svg "$fx" 2>both.err; rc=$?
is "$rc" 1 "both full: exit 1"
like "$(cat both.err)" 'cannot write full/q.svg.*No space left on device' "both full: says why"
is "$(ls -A full full2 | grep -c '^\.')" 0 "both full: no temp file left"
target_ok "both full"
done_testing
