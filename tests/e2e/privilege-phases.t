#!/usr/bin/env bash
# Least privilege, measured from the host: the sidecar's HostConfig as the engine applied it, and
# CapEff/CapPrm/CapBnd/CapAmb/Seccomp/NoNewPrivs/Uid from /proc/<pid>/status of the sidecar's
# processes in each phase (docs/HARDENING.md "Privileges", docs/SIDECAR.md). Phases are caught
# by a TEST-ONLY hook: DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,process makes the sidecar
# (setup, process) and its per-CPU recorder child (open: holding the one capability that opens
# CPU-wide perf events; record: once they are open) SIGSTOP themselves on entering those phases
# (we read their status, then SIGCONT). The per-thread recorder (--sampling thread) is caught as
# the perf child, which lives for the whole recording. Every wait is bounded.
. "$(dirname "$0")/privilege-lib.sh"
perf_child() { child_named "$1" "$2" perf; }

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
for warm in 1; do  # a first run loads the agent, so the measured run is a normal one
    timeout -k 5 90 docker flame -q -d 1 -o warm.svg "$fx" >/dev/null 2>&1
done

DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,process DOCKER_FLAME_TIMINGS=1 \
    timeout -k 10 150 docker flame -d 3 -o p.svg "$fx" 2>err &
bg=$!
sc=$(sidecar_of "$fxid")
[ -n "$sc" ] || { kill "$bg"; bail "no sidecar appeared"; }
hc=$(docker inspect -f '{{.HostConfig.Privileged}} {{.HostConfig.NetworkMode}} {{.HostConfig.ReadonlyRootfs}} {{json .HostConfig.CapDrop}} {{json .HostConfig.CapAdd}} {{json .HostConfig.SecurityOpt}} {{.HostConfig.PidMode}}' "$sc")
is "$hc" "false none true [\"ALL\"] [\"SYS_ADMIN\",\"SYS_PTRACE\",\"SETUID\",\"SETGID\",\"SYS_CHROOT\"] [\"no-new-privileges:true\"] container:$fxid" \
    "HostConfig: not privileged, no network, read-only, CapDrop ALL + 5 caps, no-new-privileges, default seccomp"
scpid=$(sidecar_pid "$sc")
if wait_stopped "$scpid" 30; then
    assert_status "$scpid" setup 0 "$SETUP_CAPS" "$SETUP_CAPS"
    is "$(st "$scpid" CapAmb)" "$NONE" "setup: no ambient caps"
    kill -CONT "$scpid"
else nok "setup: sidecar did not stop at the setup hook"; fi
# the per-CPU recorder: a child of the sidecar, nobody, SYS_ADMIN + SYS_PTRACE while it opens
# its events, nothing at all once they are open
if rp=$(child_named "$scpid" 30 flame-sidecar T); then
    assert_status "$rp" "open (recorder)" 65534 "$OPEN_CAPS" "$OPEN_CAPS"
    is "$(st "$rp" CapAmb)" "$NONE" "open (recorder): no ambient caps"
    is "$(st "$rp" Groups)" "" "open (recorder): no supplementary groups"
    kill -CONT "$rp"
    if wait_stopped "$rp" 30; then
        assert_status "$rp" "record (recorder)" 65534 "$NONE" "$NONE"
        is "$(st "$rp" CapAmb)" "$NONE" "record (recorder): no ambient caps"
        f=$(st "$rp" Seccomp_filters)
        if [ -n "$f" ]; then check "record (recorder): own seccomp filter stacked on the engine's" test "$f" -ge 2
        else ok "# SKIP kernel without Seccomp_filters"; fi
        kill -CONT "$rp"
    else nok "record (recorder): did not stop at the record hook"; kill -CONT "$rp" 2>/dev/null; fi
    assert_status "$scpid" "record (sidecar)" 0 "$SETUP_CAPS" "$SETUP_CAPS"
else nok "open: no per-CPU recorder child seen"; fi
if wait_stopped "$scpid" 60 && [ "$(uid "$scpid")" = 65534 ]; then
    assert_status "$scpid" process 65534 "$NONE" "$NONE"
    is "$(st "$scpid" CapAmb)" "$NONE" "process: no ambient caps"
    f=$(st "$scpid" Seccomp_filters)
    if [ -n "$f" ]; then check "process: own seccomp filter stacked on the engine's ($f filters)" test "$f" -ge 2
    else ok "# SKIP kernel without Seccomp_filters"; fi
    kill -CONT "$scpid"
else nok "process: sidecar did not stop at the process hook"; kill -CONT "$scpid" 2>/dev/null; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "profile with no-new-privileges: exit 0"
like "$(cat p.svg 2>/dev/null)" 'FlameFixture\.countPrimes' "profile with no-new-privileges: Java names"
caps=$(sed -n 's/^docker flame: sidecar caps [^:]*: //p' err | head -1)
is "$caps" "{\"setup\":\"$SETUP_CAPS\",\"open\":\"$OPEN_CAPS\",\"record\":\"$NONE\",\"process\":\"$NONE\"}" "S line (printed under -D) reports the same CapEff per phase"
like "$(cat err)" 'sidecar sampling [^:]*: cpu bpf' "recorded per CPU with the in-kernel filter"
is "$(sidecars_left)" 0 "sidecar removed"

# --sampling thread: perf record -p as nobody with SYS_PTRACE only (ambient, across its exec);
# the stack walker between perf and the sidecar (recorder/threadwalk.c), which reads the JVM's
# memory: nobody, no capability at all, its own seccomp filter (it stops itself at the record
# hook once sealed)
DOCKER_FLAME_SIDECAR_TEST_STOP=record DOCKER_FLAME_TIMINGS=1 \
    timeout -k 10 150 docker flame --sampling thread -d 3 -o t.svg "$fx" 2>err2 &
bg=$!
sc=$(sidecar_of "$fxid")
scpid=$(sidecar_pid "$sc")
if [ "${scpid:-0}" -gt 0 ] && pp=$(perf_child "$scpid" 30); then
    assert_status "$pp" "record (perf)" 65534 "$PTRACE_CAPS" "$PTRACE_CAPS"
    is "$(st "$pp" CapAmb)" "$PTRACE_CAPS" "record (perf): only SYS_PTRACE ambient"
    is "$(st "$pp" Groups)" "" "record (perf): no supplementary groups"
else nok "record: no perf child seen"; fi
if [ "${scpid:-0}" -gt 0 ] && wp=$(child_named "$scpid" 30 flame-sidecar T); then
    assert_status "$wp" "record (stack walker)" 65534 "$NONE" "$NONE"
    is "$(st "$wp" CapAmb)" "$NONE" "record (stack walker): no ambient caps"
    is "$(st "$wp" Groups)" "" "record (stack walker): no supplementary groups"
    f=$(st "$wp" Seccomp_filters)
    if [ -n "$f" ]; then check "record (stack walker): own seccomp filter stacked on the engine's" test "$f" -ge 2
    else ok "# SKIP kernel without Seccomp_filters"; fi
    kill -CONT "$wp"
else nok "record: no stack walker child seen stopped at the record hook"; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "--sampling thread: exit 0"
caps=$(sed -n 's/^docker flame: sidecar caps [^:]*: //p' err2 | head -1)
is "$caps" "{\"setup\":\"$SETUP_CAPS\",\"open\":\"$PTRACE_CAPS\",\"record\":\"$PTRACE_CAPS\",\"process\":\"$NONE\"}" "--sampling thread: S caps"
is "$(sidecars_left)" 0 "sidecar removed"
check "the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
done_testing
