#!/usr/bin/env bash
# The whole product through the real `docker` CLI with the REAL sidecar (build/flame-sidecar.tar,
# imported by the plugin when the image is missing) on the fixture JVM: SVG/folded/speedscope
# naming the fixture's Java methods, nothing left in the target, Ctrl-C mid-recording, `-- CMD`,
# a second endpoint, no JVM. Each run is bounded (timeout); if the first profile fails the rest
# would only repeat the failure, so the file bails out.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
if [ ! -f "$BUILD/flame-sidecar.tar" ] && ! docker image inspect "$SIDECAR_IMAGE" >/dev/null 2>&1; then
    skip_or_fail "no sidecar: build/flame-sidecar.tar missing (make)"
    done_testing
fi
ensure_fixture_image || bail "cannot build the fixture image"
plugin_env
unset DOCKER_FLAME_SIDECAR_IMAGE DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_CAPS
# FLAME_REAL_IMAGE=name: import build/flame-sidecar.tar under that name instead of the shared
# docker-flame-sidecar:VERSION (a developer run that must not disturb others' image)
if [ -n "${FLAME_REAL_IMAGE:-}" ]; then
    export DOCKER_FLAME_SIDECAR_IMAGE=$FLAME_REAL_IMAGE DOCKER_FLAME_SIDECAR_TAR=$BUILD/flame-sidecar.tar
fi
cd "$TMP"
T="timeout -k 10 150"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
hp=$(host_pid "$fx")
mounts_before=$(flame_mounts "$hp")
start=$(date +%s%N)
DOCKER_FLAME_TIMINGS=1 $T docker flame -d 5 --format svg --format folded --format speedscope -o p.svg "$fx" 2>err; rc=$?
el=$(( ($(date +%s%N) - start) / 1000000 ))
diag "docker flame -d 5: ${el} ms wall" "$(grep -E 'timings|samples' err)"
is "$rc" 0 "real sidecar: exit 0"
[ "$rc" = 0 ] || { diag "$(tail -20 err)"; bail "the real sidecar does not deliver a profile yet"; }
like "$(cat p.svg)" 'FlameFixture\.countPrimes' "SVG names FlameFixture.countPrimes"
like "$(cat p.svg)" 'FlameFixture\.mixHashes' "SVG names FlameFixture.mixHashes"
like "$(cat p.folded)" 'FlameFixture\.countPrimes' "folded names the Java methods"
check "speedscope file is speedscope JSON" python3 -c "import json,sys; d=json.load(open('p.speedscope.json')); sys.exit(0 if 'speedscope' in d.get('\$schema','') and d['profiles'] else 1)"
like "$(cat err)" 'JIT samples have Java names' "summary: named share"
like "$(cat err)" 'FlameFixture\.' "summary: top Java methods"
is "$(sidecars_left)" 0 "sidecar removed"
is "$(flame_mounts "$hp")" "$mounts_before" "no docker-flame mount left in the target"
check "the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true

# Ctrl-C mid-recording: partial profile written
$T docker flame -d 0 -o int.svg "$fx" 2>int.err &
pid=$!
wait_for 'recording [0-9]+s .*[1-9][0-9]* samples' int.err 60 || wait_for 'recording' int.err 5
ctrl_c "$pid"
wait_pid "$pid" 180; rc=$RC
is "$rc" 0 "Ctrl-C mid-recording: exit 0"
like "$(cat int.svg 2>/dev/null)" 'FlameFixture' "Ctrl-C mid-recording: partial SVG with Java names"
is "$(sidecars_left)" 0 "Ctrl-C: sidecar removed"
is "$(flame_mounts "$hp")" "$mounts_before" "Ctrl-C: no mount left"

# durations: one contract, whole milliseconds on both sides: what the plugin accepts the sidecar
# accepts (it would print "E usage" otherwise), and what it refuses it refuses before any
# container is created
$T docker flame -q -d 500ms -o d500ms.svg "$fx"; rc=$?
is "$rc" 0 "-d 500ms: accepted end to end"
like "$(cat d500ms.svg 2>/dev/null)" 'FlameFixture' "-d 500ms: a profile with Java names"
for d in 1m30s 25h; do
    $T docker flame -d "$d" -o "d$d.svg" "$fx" 2>"d$d.err" &
    pid=$!
    wait_for 'recording [0-9]+s.*[1-9][0-9]* samples' "d$d.err" 60 || nok "-d $d: no samples within 60 s"
    ctrl_c "$pid"
    wait_pid "$pid" 180
    is "$RC" 0 "-d $d: the sidecar records (stopped early with Ctrl-C), exit 0"
    like "$(cat "d$d.svg" 2>/dev/null)" 'FlameFixture' "-d $d: profile written"
done
out=$(docker flame -d 8d -o d8d.svg "$fx" 2>&1); rc=$?
is "$rc" 2 "-d 8d: over the contract's week, refused (exit 2)"
like "$out" 'invalid duration "8d": want 0 to 7d' "-d 8d: says the limit"
is "$(sidecars_left)" 0 "-d 8d: no sidecar was created"

# -- CMD
$T docker flame -q -o cmd.svg "$fx" -- sh -c 'sleep 3'; rc=$?
is "$rc" 0 "-- CMD: exit 0"
like "$(cat cmd.svg 2>/dev/null)" 'FlameFixture' "-- CMD: SVG with Java names"
# a command that cannot start (a typo in a CI job's load command): refused before any sidecar,
# exit 2, one line, nothing written; one that started and failed: exit 1 (its own status in the
# message and in --summary-json's "command")
s=$(date +%s%N)
$T docker flame -o nocmd.svg "$fx" -- nosuchcmd-$$ --flag 2>nocmd.err; rc=$?
ms=$(( ($(date +%s%N) - s) / 1000000 ))
is "$rc" 2 "-- nosuchcmd: exit 2"
is "$(cat nocmd.err)" "docker flame: cannot run nosuchcmd-$$: no such command in \$PATH (nothing was profiled)" "-- nosuchcmd: one line"
check "-- nosuchcmd: refused at once (${ms} ms), nothing written" test "$ms" -lt 5000 -a ! -e nocmd.svg
is "$(sidecars_left)" 0 "-- nosuchcmd: no sidecar was created"
$T docker flame -q -o nocmd.svg "$fx" -- ./not-executable 2>nocmd.err; rc=$?
is "$rc" 2 "-- ./missing-file: exit 2 ($(cat nocmd.err))"
$T docker flame -q -o cmdfail.svg --summary-json cmdfail.json "$fx" -- sh -c 'sleep 1; exit 3' 2>cmdfail.err; rc=$?
is "$rc" 1 "-- CMD that fails (exit 3): exit 1"
like "$(cat cmdfail.err)" 'sh failed: exit status 3' "... its status in the message"
is "$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["command"]; print(c["argv0"], c["exit_code"], c["signal"])' cmdfail.json)" "sh 3 None" \
    "... and in --summary-json (command.exit_code 3)"
is "$(python3 "$ROOT/tests/schema_check.py" "$ROOT/docs/summary.schema.json" cmdfail.json 2>&1)" "" "... which is valid against docs/summary.schema.json"
check "... the profile is still written" test -s cmdfail.svg

# second endpoint (named context through a forwarding socket)
python3 "$STUB_DIR/forward.py" "$TMP/second.sock" > fwd.log 2>&1 &
fwd=$!
wait_for '^ready' fwd.log 10 || bail "forwarder did not start"
docker context create flame-real-second --docker "host=unix://$TMP/second.sock" >/dev/null 2>&1
$T docker --context flame-real-second flame -q -d 3 -o ctx.svg "$fx"; rc=$?
is "$rc" 0 "--context second endpoint: exit 0"
like "$(cat ctx.svg 2>/dev/null)" 'FlameFixture' "--context: SVG with Java names"
kill "$fwd"; wait "$fwd" 2>/dev/null

# a target that stops between the sidecar's create and its start (the engine then fails the
# start with its runtime's words, "... lstat /proc/N/ns/pid: no such file or directory"): the
# plugin says the container stopped, exit 3, in one line, and leaves nothing behind
race=$(fixture pid1) || bail "fixture for the race did not start"
python3 "$STUB_DIR/forward.py" --before-start "docker kill $race >/dev/null; docker wait $race >/dev/null" \
    "$TMP/race.sock" > race-fwd.log 2>&1 &
rfwd=$!
wait_for '^ready' race-fwd.log 10 || bail "forwarder did not start"
out=$($T docker -H "unix://$TMP/race.sock" flame -q -d 3 -o race.svg "$race" 2>&1); rc=$?
is "$rc" 3 "target stopped before its sidecar started: exit 3"
like "$out" '^docker flame: container [^ ]+ stopped before its profile could start \(exit code [0-9]+\)' "... says the container stopped"
is "$(printf '%s\n' "$out" | wc -l)" 1 "... in one line"
like "$(cat race-fwd.log)" 'before-start ran, status 0' "... (the target was stopped right before the start request)"
check "... and wrote nothing" test ! -e race.svg
is "$(sidecars_left)" 0 "... and left no sidecar"
kill "$rfwd"; wait "$rfwd" 2>/dev/null

# two JVMs in one container; --pid picks one; a --pid that is no JVM
two=$(fixture two) || bail "fixture two did not start"
$T docker flame -d 2 -o two.svg "$two" 2>err; rc=$?
is "$rc" 0 "two JVMs: exit 0"
is "$(grep -c '^  JVM pid' err)" 2 "two JVMs: both found"
jp=$(sed -n 's/^  JVM pid \([0-9]*\) .*/\1/p' err | tail -1)
$T docker flame --pid "$jp" -d 2 -o one.svg "$two" 2>err; rc=$?
is "$rc" 0 "--pid: exit 0"
is "$(grep '^  JVM pid' err | sed 's/ (.*//')" "  JVM pid $jp" "--pid: only that JVM"
out=$($T docker flame --pid 4242 -d 2 "$two" 2>&1); rc=$?
is "$rc" 4 "--pid of no JVM: exit 4"
like "$out" 'no JVM with --pid in container' "--pid of no JVM: message"

# no JVM
nj=$(fixture nojvm) || bail "fixture nojvm did not start"
out=$($T docker flame -d 2 "$nj" 2>&1); rc=$?
is "$rc" 4 "no JVM: exit 4"
like "$out" 'no JVM in container' "no JVM: message"
is "$(sidecars_left)" 0 "nothing left behind"
done_testing
