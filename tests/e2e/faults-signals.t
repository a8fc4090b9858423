#!/usr/bin/env bash
# Faults through the real `docker flame` with the real sidecar on the fixture JVM: Ctrl-C
# (SIGINT to the plugin process, as a terminal delivers it) in each phase, a second Ctrl-C,
# `docker kill` of the sidecar, the JVM killed mid-recording, the plugin SIGKILLed then
# `docker flame gc`. After each: the JVM still runs (unless we killed it), no sidecar left, no
# docker-flame mount in the target's mountinfo, nothing new in the target's /tmp, no temp file
# in the output dir, one clear line. Phases are held with the TEST-ONLY sidecar hook
# (DOCKER_FLAME_SIDECAR_TEST_STOP, see privilege-phases.t). Every wait is bounded.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
real_plugin_setup
T="timeout -k 10 150"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
hp=$(target_pid "$fx") || bail "cannot verify the fixture's pid"
$T docker flame -q -d 1 -o warm.svg "$fx" >/dev/null 2>&1 || bail "a first profile fails"
rm -f warm.svg
tmp0=$(target_tmp "$fx") || bail "cannot list the target's /tmp"
tmp0=$(printf '%s' "$tmp0" | tr '\n' ' ')
m0=$(flame_mounts "$hp")
# nothing left: JVM alive, no sidecar, no mount, target /tmp as before, no temp/out files
clean() { # LABEL
    check "$1: the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
    is "$(sidecars_left)" 0 "$1: no sidecar left"
    is "$(flame_mounts "$hp")" "$m0" "$1: no docker-flame mount in the target"
    tmp_is "$fx" "$tmp0" "$1: the target's /tmp as before"
    is "$(ls -A out | grep '^\.' | wc -l)" 0 "$1: no temp file in the output dir"
}
one_line() { # LABEL FILE: the last line is the clear one
    is "$(grep -c '^docker flame: .*\(error\|interrupted\|aborted\|stopped\|died\|killed\|exited\)' "$2")" 1 "$1: one clear error line" || diag "$(cat "$2")"
}
sidecar_of() { # bounded: the id of this test's sidecar on $fxid
    local i id
    for ((i = 0; i < 300; i++)); do
        id=$(docker ps -q --filter label=com.docker-flame.sidecar=1 --filter "label=com.docker-flame.target=$fxid" \
            --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | head -1)
        [ -n "$id" ] && { echo "$id"; return 0; }
        sleep 0.1
    done
    return 1
}
stopped_pid() { # bounded: the sidecar's host pid once it is stopped at the hook
    local i p
    for ((i = 0; i < 600; i++)); do
        p=$(docker inspect -f '{{.State.Pid}}' "$1" 2>/dev/null)
        [ "${p:-0}" -gt 0 ] && grep -q '^State:[[:space:]]*T' "/proc/$p/status" 2>/dev/null && { echo "$p"; return 0; }
        sleep 0.05
    done
    return 1
}
mkdir -p out

# 1. Ctrl-C while the sidecar starts (held before it touches the target): abort, nothing written
DOCKER_FLAME_SIDECAR_TEST_STOP=setup $T docker flame -d 5 -o out/start.svg "$fx" 2>start.err &
bg=$!; pp=$(plugin_under "$bg")
sc=$(sidecar_of) && scp=$(stopped_pid "$sc") || bail "sidecar not held at setup"
kill -INT "$pp"; sleep 0.3; kill -CONT "$scp"
wait_pid "$bg" 60
diag "$(cat start.err)"
is "$RC" 130 "Ctrl-C before recording: exit 130 (nothing to save)"
check "Ctrl-C before recording: no output" test ! -e out/start.svg
like "$(tail -1 start.err)" 'interrupted before recording started: nothing written' "Ctrl-C before recording: says so"
clean "Ctrl-C at start"

# 2. Ctrl-C mid-recording: partial profile written, exit 0
$T docker flame -d 0 -o out/rec.svg "$fx" 2>rec.err &
bg=$!; pp=$(plugin_under "$bg")
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' rec.err 60 || nok "no samples within 60 s"
kill -INT "$pp"
wait_pid "$bg" 90
is "$RC" 0 "Ctrl-C mid-recording: exit 0"
like "$(cat out/rec.svg 2>/dev/null)" 'FlameFixture\.countPrimes' "Ctrl-C mid-recording: partial SVG with Java names"
clean "Ctrl-C mid-recording"

# 3. Ctrl-C during processing (held after the privilege drop): the profile is still written
DOCKER_FLAME_SIDECAR_TEST_STOP=process $T docker flame -d 2 -o out/proc.svg "$fx" 2>proc.err &
bg=$!; pp=$(plugin_under "$bg")
sc=$(sidecar_of) && scp=$(stopped_pid "$sc") || nok "sidecar not held at process"
kill -INT "$pp"; sleep 0.3; kill -CONT "$scp"
wait_pid "$bg" 90
is "$RC" 0 "Ctrl-C during processing: exit 0"
like "$(cat out/proc.svg 2>/dev/null)" 'FlameFixture\.countPrimes' "Ctrl-C during processing: SVG written"
clean "Ctrl-C during processing"

# 4. a second Ctrl-C (during processing) aborts: exit 130, nothing written
DOCKER_FLAME_SIDECAR_TEST_STOP=process $T docker flame -d 2 -o out/two.svg "$fx" 2>two.err &
bg=$!; pp=$(plugin_under "$bg")
sc=$(sidecar_of) && scp=$(stopped_pid "$sc") || nok "sidecar not held at process"
kill -INT "$pp"; sleep 0.5; kill -INT "$pp"; sleep 0.3; kill -CONT "$scp" 2>/dev/null
wait_pid "$bg" 90
is "$RC" 130 "second Ctrl-C: exit 130"
check "second Ctrl-C: no output" test ! -e out/two.svg
one_line "second Ctrl-C" two.err
clean "second Ctrl-C"

# 5. `docker kill` of the sidecar mid-recording
$T docker flame -d 0 -o out/kill.svg "$fx" 2>kill.err &
bg=$!
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' kill.err 60 || nok "no samples within 60 s"
sc=$(sidecar_of); docker kill "$sc" >/dev/null
wait_pid "$bg" 60
is "$RC" 1 "docker kill sidecar: exit 1"
one_line "docker kill sidecar" kill.err
like "$(tail -1 kill.err)" 'sidecar .* (stopped|killed|died)' "docker kill sidecar: says the sidecar stopped"
check "docker kill sidecar: no output" test ! -e out/kill.svg
check "docker kill sidecar: the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
is "$(sidecars_left)" 0 "docker kill sidecar: no sidecar left"
like "$(tail -1 kill.err)" 'removed by `flame-sidecar restore`' "docker kill sidecar: a restore sidecar undid its work"
is "$(flame_mounts "$hp")" "$m0" "docker kill sidecar: no mount left (restored)"
tmp_is "$fx" "$tmp0" "docker kill sidecar: the target's /tmp as before (restored)"
# a later run on the same JVM still works (and removes the stale map)
$T docker flame -q -d 1 -o out/after.svg "$fx" 2>after.err; rc=$?
is "$rc" 0 "a run after the killed sidecar works"
rm -f out/after.svg

# 6. the plugin SIGKILLed mid-recording: `docker flame gc` removes its sidecar (and it restores the target)
$T docker flame -d 0 -o out/gc.svg "$fx" 2>gc.err &
bg=$!; pp=$(plugin_under "$bg")
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' gc.err 60 || nok "no samples within 60 s"
out=$($T docker flame gc 2>&1)
like "$out" 'kept: their docker flame is still running' "gc while the plugin lives: its sidecar is kept"
is "$(sidecars_left)" 1 "gc while the plugin lives: the sidecar still runs"
kill -KILL "$pp"; wait_pid "$bg" 30
is "$(sidecars_left)" 1 "plugin SIGKILLed: its sidecar is left running"
out=$($T docker flame gc 2>&1); rc=$?
is "$rc" 0 "gc: exit 0"
like "$out" 'removed sidecar [0-9a-f]{12} \(was running\)' "gc: removed the running sidecar"
clean "plugin SIGKILLed + gc"
out=$($T docker flame gc 2>&1)
like "$out" '^0 sidecars removed' "gc again: nothing to do"

# 6a. plugin SIGKILLed, then its sidecar killed too (Exited (137)): gc removes it AND restores
$T docker flame -d 0 -o out/gc2.svg "$fx" 2>gc2.err &
bg=$!; pp=$(plugin_under "$bg")
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' gc2.err 60 || nok "no samples within 60 s"
kill -KILL "$pp"; wait_pid "$bg" 30
docker kill "$(sidecar_of)" >/dev/null
check "killed plugin + killed sidecar: the agent mount is left" test "$(flame_mounts "$hp")" -gt "$m0"
out=$($T docker flame gc 2>&1); rc=$?
is "$rc" 0 "gc (killed sidecar): exit 0"
like "$out" "restored container ${fxid:0:12}" "gc restored the target of the killed sidecar"
clean "killed plugin + killed sidecar + gc"

# 6b. a leftover whose owner pid was reused by another process (here: this shell, alive, not a
# docker-flame): gc must not keep it
fake=$(docker create --label com.docker-flame.sidecar=1 --label com.docker-flame.owner-pid=$$ \
    --label com.docker-flame.created=$(date +%s) --label docker-flame-test=1 \
    --label "docker-flame-test.owner=$FLAME_TEST_OWNER" --network none flame-fixture-jvm:latest /init --pause)
out=$($T docker flame gc 2>&1)
like "$out" "removed sidecar ${fake:0:12}" "gc: a leftover whose owner pid is reused by a non-docker-flame process is removed"
is "$(sidecars_left)" 0 "gc: nothing of ours left"

# 7. the JVM exits mid-recording (docker kill -s KILL the fixture): its container stops
$T docker flame -d 0 -o out/jvm.svg "$fx" 2>jvm.err &
bg=$!
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' jvm.err 60 || nok "no samples within 60 s"
docker kill -s KILL "$fx" >/dev/null
wait_pid "$bg" 90
diag "$(cat jvm.err)"
is "$RC" 3 "JVM killed: exit 3 (container not running)"
one_line "JVM killed" jvm.err
like "$(tail -1 jvm.err)" 'container .* stopped during the profile .*JVM exited or was killed' "JVM killed: says the target stopped"
is "$(sidecars_left)" 0 "JVM killed: no sidecar left"
is "$(ls -A out | grep '^\.' | wc -l)" 0 "JVM killed: no temp file"
done_testing
