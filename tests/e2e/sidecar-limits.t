#!/usr/bin/env bash
# The sidecar container's limits (docs/SIDECAR.md "Limits"), through the real plugin and sidecar:
# the HostConfig as the engine applied it (memory with the tmpfs at half of it, no swap, tasks,
# one CPU, /tmp 0711), the user's DOCKER_FLAME_SIDECAR_MEMORY (and a bad value refused before
# anything is created), and a run that meets the limit ending in one clear line with nothing
# written and the target restored -- never a cut or empty graph: the sidecar itself killed by the
# OOM killer (a TEST-ONLY tmpfs larger than the limit: DOCKER_FLAME_SIDECAR_TEST_TMPFS), and its
# perf script killed (SIGKILL from here while the `script` hook holds it). Bounded waits.
. "$(dirname "$0")/privilege-lib.sh"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
timeout -k 5 90 docker flame -q -d 1 -o warm.svg "$fx" >/dev/null 2>&1 # the agent loaded once

# limits DESC WANT [ENV=VALUE]: the sidecar's HostConfig limits while it is stopped at setup
limits() {
    local d=$1 want=$2; shift 2
    env "$@" DOCKER_FLAME_SIDECAR_TEST_STOP=setup timeout -k 10 120 docker flame -q -d 1 -o l.svg "$fx" >/dev/null 2>&1 &
    local bg=$! sc scpid
    sc=$(sidecar_of "$fxid")
    scpid=$(sidecar_pid "$sc")
    is "$(docker inspect -f '{{.HostConfig.Memory}} {{.HostConfig.MemorySwap}} {{.HostConfig.PidsLimit}} {{.HostConfig.NanoCpus}} {{json .HostConfig.Tmpfs}}' "$sc" 2>&1)" \
        "$want" "$d"
    wait_stopped "$scpid" 30 && kill -CONT "$scpid"
    wait_pid "$bg" 90
    is "$RC" 0 "$d: the profile is written"
}
limits "HostConfig: 1 GiB (no swap), 64 tasks, one CPU, /tmp half of the memory, 0711" \
    '1073741824 1073741824 64 1000000000 {"/tmp":"rw,nosuid,nodev,noexec,size=512m,mode=0711"}'
limits "DOCKER_FLAME_SIDECAR_MEMORY=2g: 2 GiB, /tmp 1 GiB" \
    '2147483648 2147483648 64 1000000000 {"/tmp":"rw,nosuid,nodev,noexec,size=1024m,mode=0711"}' \
    DOCKER_FLAME_SIDECAR_MEMORY=2g

DOCKER_FLAME_SIDECAR_MEMORY=lots timeout -k 5 60 docker flame -q -d 1 -o bad.svg "$fx" >/dev/null 2>errb
is "$?" 2 "DOCKER_FLAME_SIDECAR_MEMORY=lots: exit 2"
is "$(wc -l <errb)" 1 "... one line"
like "$(cat errb)" 'DOCKER_FLAME_SIDECAR_MEMORY=lots: not a memory size' "... naming the variable"
is "$(sidecars_left)" 0 "... no sidecar created"

# the sidecar itself out of memory: its /tmp (where the library copies go) larger than its limit
pid=$(target_pid "$fx")
DOCKER_FLAME_SIDECAR_MEMORY=16m DOCKER_FLAME_SIDECAR_TEST_TMPFS=512m \
    timeout -k 10 120 docker flame -q -d 2 -o oom.svg "$fx" >/dev/null 2>erro
is "$?" 1 "out of memory: exit 1"
is "$(grep -c . erro)" 1 "... one line"
like "$(cat erro)" 'ran out of memory \(its limit is 16 MiB; give it more with DOCKER_FLAME_SIDECAR_MEMORY' \
    "... saying so, with the limit and the way to raise it"
check "... nothing written" test ! -e oom.svg
is "$(flame_mounts "$pid")" 0 "... the target restored (no docker-flame mount)"
is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "... the JVM still runs"
is "$(sidecars_left)" 0 "... no sidecar left"

# perf script killed (as the OOM killer would a big one): the part it printed is no profile
DOCKER_FLAME_SIDECAR_TEST_STOP=script timeout -k 10 120 docker flame -q -d 2 -o killed.svg "$fx" >/dev/null 2>errk &
bg=$!
sc=$(sidecar_of "$fxid")
scpid=$(sidecar_pid "$sc")
if [ "${scpid:-0}" -gt 0 ] && pp=$(find_in_tree "$scpid" 60 perf) && feeder=$(find_in_tree "$scpid" 10 flame-sidecar T); then
    kill -KILL "$pp"
    kill -CONT "$feeder"
else nok "no perf script held by the script hook"; fi
wait_pid "$bg" 90
is "$RC" 1 "perf script killed: exit 1"
like "$(cat errk)" 'perf script was killed by signal 9' "... saying so"
check "... nothing written" test ! -e killed.svg
is "$(sidecars_left)" 0 "... no sidecar left"
done_testing
