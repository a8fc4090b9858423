#!/usr/bin/env bash
# Least privilege, measured from the host: the sidecar's HostConfig as the engine applied it, and
# CapEff/CapPrm/CapBnd/CapAmb/Seccomp/NoNewPrivs/Uid from /proc/<pid>/status of the sidecar's
# processes in each phase (docs/HARDENING.md "Privileges", docs/SIDECAR.md). Phases are caught
# by a TEST-ONLY hook: DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,process,script makes the
# sidecar (setup, process) and its per-CPU recorder child (open: holding the one capability that
# opens CPU-wide perf events; record: once they are open) SIGSTOP themselves on entering those
# phases (we read their status, then SIGCONT); `script` holds the exec'd `perf script` alive until
# the stopped child feeding it is continued. The per-thread recorder (--sampling thread) is caught
# as the perf child, which lives for the whole recording. In every phase of the profile, of `top`
# and of `record`, an attacker (`hostile probe`, uid 65534 without capabilities, in the target
# and on the host) must reach none of the sidecar's processes (docs/HARDENING.md "Who can reach
# the sidecar"). Every wait is bounded.
. "$(dirname "$0")/privilege-lib.sh"
perf_child() { child_named "$1" "$2" perf; }

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
for warm in 1; do  # a first run loads the agent, so the measured run is a normal one
    timeout -k 5 90 docker flame -q -d 1 -o warm.svg "$fx" >/dev/null 2>&1
done

DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,process,script DOCKER_FLAME_TIMINGS=1 \
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
    unreachable setup "$fx" "$scpid" $(tree "$scpid")
    kill -CONT "$scpid"
else nok "setup: sidecar did not stop at the setup hook"; fi
# the per-CPU recorder: a child of the sidecar, the run's uid, SYS_ADMIN + SYS_PTRACE while it opens
# its events, nothing at all once they are open
if rp=$(child_named "$scpid" 30 flame-sidecar T); then
    assert_status "$rp" "open (recorder)" run "$OPEN_CAPS" "$OPEN_CAPS"
    is "$(st "$rp" CapAmb)" "$NONE" "open (recorder): no ambient caps"
    is "$(st "$rp" Groups)" "" "open (recorder): no supplementary groups"
    unreachable open "$fx" "$rp" $(tree "$scpid")
    kill -CONT "$rp"
    if wait_stopped "$rp" 30; then
        assert_status "$rp" "record (recorder)" run "$NONE" "$NONE"
        is "$(st "$rp" CapAmb)" "$NONE" "record (recorder): no ambient caps"
        f=$(st "$rp" Seccomp_filters)
        if [ -n "$f" ]; then check "record (recorder): own seccomp filter stacked on the engine's" test "$f" -ge 2
        else ok "# SKIP kernel without Seccomp_filters"; fi
        unreachable record "$fx" "$rp" $(tree "$scpid")
        kill -CONT "$rp"
    else nok "record (recorder): did not stop at the record hook"; kill -CONT "$rp" 2>/dev/null; fi
    assert_status "$scpid" "record (sidecar)" 0 "$SETUP_CAPS" "$SETUP_CAPS"
else nok "open: no per-CPU recorder child seen"; fi
if wait_stopped "$scpid" 60 && is_run_uid "$(uid "$scpid")"; then
    assert_status "$scpid" process run "$NONE" "$NONE"
    is "$(st "$scpid" CapAmb)" "$NONE" "process: no ambient caps"
    f=$(st "$scpid" Seccomp_filters)
    if [ -n "$f" ]; then check "process: own seccomp filter stacked on the engine's ($f filters)" test "$f" -ge 2
    else ok "# SKIP kernel without Seccomp_filters"; fi
    unreachable process "$fx" "$scpid" $(tree "$scpid")
    kill -CONT "$scpid"
else nok "process: sidecar did not stop at the process hook"; kill -CONT "$scpid" 2>/dev/null; fi
# perf script, exec'd, waiting for the recording its stopped feeder holds back
if pp=$(find_in_tree "$scpid" 30 perf) && feeder=$(find_in_tree "$scpid" 10 flame-sidecar T); then
    is "$(st "$pp" CapEff) $(st "$pp" CapPrm)" "$NONE $NONE" "script (perf script): no capability"
    unreachable script "$fx" "$pp" $(tree "$scpid")
    kill -CONT "$feeder"
else nok "script: no perf script held by the script hook"; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "profile with no-new-privileges: exit 0"
like "$(cat p.svg 2>/dev/null)" 'FlameFixture\.countPrimes' "profile with no-new-privileges: Java names"
caps=$(sed -n 's/^docker flame: sidecar caps [^:]*: //p' err | head -1)
is "$caps" "{\"setup\":\"$SETUP_CAPS\",\"open\":\"$OPEN_CAPS\",\"record\":\"$NONE\",\"process\":\"$NONE\"}" "S line (printed under -D) reports the same CapEff per phase"
like "$(cat err)" 'sidecar sampling [^:]*: cpu bpf' "recorded per CPU with the in-kernel filter"
is "$(sidecars_left)" 0 "sidecar removed"

# --sampling thread: perf record -p as the run's uid with SYS_PTRACE only (ambient, across its
# exec); the stack walker between perf and the sidecar (recorder/threadwalk.c), which reads the
# JVM's memory: the run's uid, no capability at all, its own seccomp filter (it stops itself at
# the record hook once sealed)
DOCKER_FLAME_SIDECAR_TEST_STOP=record DOCKER_FLAME_TIMINGS=1 \
    timeout -k 10 150 docker flame --sampling thread -d 3 -o t.svg "$fx" 2>err2 &
bg=$!
sc=$(sidecar_of "$fxid")
scpid=$(sidecar_pid "$sc")
if [ "${scpid:-0}" -gt 0 ] && pp=$(perf_child "$scpid" 30); then
    assert_status "$pp" "record (perf)" run "$PTRACE_CAPS" "$PTRACE_CAPS"
    is "$(st "$pp" CapAmb)" "$PTRACE_CAPS" "record (perf): only SYS_PTRACE ambient"
    is "$(st "$pp" Groups)" "" "record (perf): no supplementary groups"
    unreachable "record (perf record -p)" "$fx" "$pp" $(tree "$scpid")
else nok "record: no perf child seen"; fi
if [ "${scpid:-0}" -gt 0 ] && wp=$(child_named "$scpid" 30 flame-sidecar T); then
    assert_status "$wp" "record (stack walker)" run "$NONE" "$NONE"
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

# --kernel: the kernel's symbol table (real addresses: a KASLR bypass) reaches perf script as a
# descriptor of a file without a name, and the unreachable perf script holds it
fk=$(fixture kernel) || bail "fixture kernel did not start"
fkid=$(docker inspect -f '{{.Id}}' "$fk")
DOCKER_FLAME_SIDECAR_TEST_STOP=script timeout -k 10 150 docker flame --kernel -d 5 --format folded -o k.folded "$fk" 2>errk &
bg=$!
sc=$(sidecar_of "$fkid")
scpid=$(sidecar_pid "$sc")
if [ "${scpid:-0}" -gt 0 ] && pp=$(find_in_tree "$scpid" 60 perf) && feeder=$(find_in_tree "$scpid" 10 flame-sidecar T); then
    unreachable "--kernel script" "$fk" "$pp" $(tree "$scpid")
    like "$(ls -l /proc/"$pp"/fd/ 2>/dev/null)" 'memfd:kallsyms' "--kernel script: kallsyms is an fd of perf script (a memfd)"
    is "$(find /proc/"$pp"/root/tmp -name '*kallsyms*' 2>/dev/null | wc -l)" 0 "--kernel script: no kallsyms file in the sidecar's /tmp"
    kill -CONT "$feeder"
else nok "--kernel script: no perf script held by the script hook"; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "--kernel: exit 0"
like "$(cat k.folded 2>/dev/null)" '_\[k\]' "--kernel: kernel frames named"
is "$(sidecars_left)" 0 "sidecar removed"

# top and record (the sidecar's `top` verb, windows): the first window's recorder stops at open
# and record, its perf script (in the processing child) is held; every process of the sidecar
# is probed in each phase
windows_phases() { # DESC LOG READY CMD...: run CMD with the hooks, probe each phase, then Ctrl-C
    # once READY (a regex) is in its output or LOG (a window after the held one): exit 0
    local d=$1 log=$2 ready=$3; shift 3
    DOCKER_FLAME_SIDECAR_TEST_STOP=setup,open,record,script timeout -k 10 150 "$@" >"$log.out" 2>"$log" &
    local bg=$! sc scpid rp pp feeder i c
    sc=$(sidecar_of "$fxid")
    scpid=$(sidecar_pid "$sc")
    if [ "${scpid:-0}" -gt 0 ] && wait_stopped "$scpid" 30; then
        unreachable "$d setup" "$fx" "$scpid" $(tree "$scpid")
        kill -CONT "$scpid"
    else nok "$d setup: sidecar did not stop at the setup hook"; fi
    # the recorder: the stopped child that holds the capability that opens the events
    rp=
    for ((i = 0; i < 600; i++)); do
        for c in $(tree "$scpid"); do
            [ "$c" != "$scpid" ] && [ "$(st "$c" CapEff)" = "$OPEN_CAPS" ] && case "$(st "$c" State)" in T*) rp=$c ;; esac
        done
        [ -n "$rp" ] && break
        sleep 0.05
    done
    if [ -n "$rp" ]; then
        unreachable "$d open" "$fx" "$rp" $(tree "$scpid")
        kill -CONT "$rp"
        if wait_stopped "$rp" 30; then unreachable "$d record" "$fx" "$rp" $(tree "$scpid"); fi
        kill -CONT "$rp"
    else nok "$d open: no per-CPU recorder stopped at the open hook"; fi
    if pp=$(find_in_tree "$scpid" 60 perf) && feeder=$(find_in_tree "$scpid" 10 flame-sidecar T); then
        is "$(st "$pp" CapEff) $(st "$pp" CapPrm)" "$NONE $NONE" "$d script (perf script): no capability"
        unreachable "$d script" "$fx" "$pp" $(tree "$scpid")
        kill -CONT "$feeder"
    else nok "$d script: no perf script held by the script hook"; fi
    seen_ready() { cat "$log.out" "$log" 2>/dev/null | grep -Eq "$ready"; }
    wait_until 60 seen_ready || nok "$d: no /$ready/ after the held window"
    ctrl_c "$bg"
    wait_pid "$bg" 120
    is "$RC" 0 "$d: exit 0 after Ctrl-C"
    [ "$RC" = 0 ] || fdiag "$(cat "$log")"
    is "$(sidecars_left)" 0 "$d: sidecar removed"
}
windows_phases top top.err '^--- docker flame top' docker flame top "$fx" --interval 1s
windows_phases record rec.err 'window [0-9]+ stored \([0-9.]+ s, [1-9]' \
    docker flame record "$fx" --window 1s --store "sqlite://$TMP/rec.db"
check "the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
done_testing
