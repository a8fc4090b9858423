#!/usr/bin/env bash
# `docker flame host`: least privilege, measured from the host (docs/HOST.md "What it sees"):
# the sidecar's HostConfig as the engine applied it, and CapEff/Seccomp/NoNewPrivs/Uid from
# /proc/<pid>/status of the host sidecar's processes in each phase: the sidecar (setup, process),
# the per-CPU recorder (open, record) and the scanner child (nobody, nothing, the seccomp filter,
# for its whole life). Hooks and helpers as in tests/e2e/privilege-phases.t
# (DOCKER_FLAME_SIDECAR_TEST_STOP, TEST ONLY). In every phase (perf script too, over the whole
# host's stacks) no uid-65534 process of the host reaches any of the sidecar's processes
# (`hostile probe`, docs/HARDENING.md "Who can reach the sidecar"). Every wait is bounded.
. "$(dirname "$0")/privilege-lib.sh"

# a JVM of this engine, so that the setup phase injects the agent as in a profile
fx=$(fixture pid1) || bail "fixture pid1 did not start"
DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,process,script \
    timeout -k 10 150 docker flame host -d 3 --format folded -o h.folded >table 2>err &
bg=$!
sc=$(sidecar_of "host")
[ -n "$sc" ] || { kill "$bg"; bail "no host sidecar appeared"; }
hc=$(docker inspect -f '{{.HostConfig.Privileged}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{json .HostConfig.CapDrop}} {{json .HostConfig.CapAdd}} {{json .HostConfig.SecurityOpt}} {{.HostConfig.PidMode}} {{.HostConfig.CgroupnsMode}}' "$sc")
# the engine itself adds label=disable (no SELinux label) to a container in the host PID namespace
hc=${hc/,\"label=disable\"/}
is "$hc" "false none true [\"ALL\"] [\"SYS_ADMIN\",\"SYS_PTRACE\",\"SETUID\",\"SETGID\",\"SYS_CHROOT\"] [\"no-new-privileges:true\"] host host" \
    "HostConfig: not privileged, no network, read-only, CapDrop ALL + 5 caps, no-new-privileges, host PID and cgroup namespaces"
scpid=$(sidecar_pid "$sc")
if wait_stopped "$scpid" 30; then
    assert_status "$scpid" setup 0 "$SETUP_CAPS" "$SETUP_CAPS"
    unreachable "host setup" "" "$scpid" $(tree "$scpid")
    kill -CONT "$scpid"
else nok "setup: sidecar did not stop at the setup hook"; fi
if rp=$(child_named "$scpid" 30 flame-sidecar T); then
    assert_status "$rp" "open (recorder)" run "$OPEN_CAPS" "$OPEN_CAPS"
    # the scanner: the other flame-sidecar child, running
    scan=
    for c in $(cat /proc/"$scpid"/task/*/children 2>/dev/null); do
        [ "$c" != "$rp" ] && [ "$(cat /proc/"$c"/comm 2>/dev/null)" = flame-sidecar ] && is_run_uid "$(uid "$c")" && scan=$c
    done
    if [ -n "$scan" ]; then assert_status "$scan" "scanner" run "$NONE" "$NONE"
    else nok "scanner: no unprivileged scanner child seen"; fi
    unreachable "host open (the scanner too)" "" "$rp" $(tree "$scpid")
    kill -CONT "$rp"
    if wait_stopped "$rp" 30; then
        assert_status "$rp" "record (recorder)" run "$NONE" "$NONE"
        unreachable "host record" "" "$rp" $(tree "$scpid")
        kill -CONT "$rp"
    else nok "record (recorder): did not stop at the record hook"; kill -CONT "$rp" 2>/dev/null; fi
else nok "open: no per-CPU recorder child seen"; fi
if wait_stopped "$scpid" 60 && is_run_uid "$(uid "$scpid")"; then
    assert_status "$scpid" process run "$NONE" "$NONE"
    unreachable "host process" "" "$scpid" $(tree "$scpid")
    kill -CONT "$scpid"
else nok "process: sidecar did not stop at the process hook"; kill -CONT "$scpid" 2>/dev/null; fi
# perf script over the whole host's perf.data, held alive by the script hook
if pp=$(find_in_tree "$scpid" 30 perf) && feeder=$(find_in_tree "$scpid" 10 flame-sidecar T); then
    is "$(st "$pp" CapEff) $(st "$pp" CapPrm)" "$NONE $NONE" "host script (perf script): no capability"
    unreachable "host script" "" "$pp" $(tree "$scpid")
    kill -CONT "$feeder"
else nok "host script: no perf script held by the script hook"; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "host with the phase hooks: exit 0"; [ "$rc" = 0 ] || fdiag "$(cat err)" "$(docker ps -a)"
like "$(cat h.folded 2>/dev/null)" 'FlameFixture\.' "Java names in the host graph"
is "$(flame_mounts "$(target_pid "$fx")")" 0 "no docker-flame mount left in the JVM"

# --- the host sidecar SIGKILLed while the agent is in the JVM: restored by the plugin ---
pid=$(target_pid "$fx")
timeout -k 5 120 docker flame host -q -d 30 -o k.folded >/dev/null 2>errk &
bg=$!
for ((i = 0; i < 300; i++)); do [ "$(flame_mounts "$pid")" -gt 0 ] && break; sleep 0.1; done
check "the agent is mounted in the JVM while recording" test "$(flame_mounts "$pid")" -gt 0
docker kill "$(docker ps -q --filter label=com.docker-flame.target=host --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER")" >/dev/null
wait_pid "$bg" 120; rc=$RC
is "$rc" 1 "killed host sidecar: exit 1"
like "$(cat errk)" 'killed \(exit 137\).*restored' "... says the JVMs were restored"
is "$(flame_mounts "$pid")" 0 "... and no docker-flame mount is left in the JVM"
check "... and nothing written" test ! -e k.folded

# --- refusals: exit 6 with one line ---
DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON=1 timeout -k 5 90 docker flame host -q -d 1 -o r.folded >/dev/null 2>err6
is "$?" 6 "a recorder refused CPU-wide events: exit 6"
is "$(wc -l <err6)" 1 "... with one line"
like "$(cat err6)" 'refused system-wide sampling' "... that says so"
check "... and no graph" test ! -e r.folded
done_testing
