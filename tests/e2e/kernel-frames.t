#!/usr/bin/env bash
# Kernel frames, opt-in: `docker flame --kernel` records the kernel part of the target's
# stacks too, marked _[k], in every output; without it there is none. The extra privilege
# (CAP_SYSLOG: real addresses from /proc/kallsyms) is in the sidecar's CapAdd only with --kernel,
# and gone after the privilege drop. Refusals are one line and exit 6 (docs/PLUGIN.md): here a
# real one -- the kernel hides kallsyms addresses from a sidecar without CAP_SYSLOG
# (perf_event_paranoid 2) -- and the verbs/modes that cannot record kernel stacks are usage errors.
. "$(dirname "$0")/privilege-lib.sh"
unset DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON DOCKER_FLAME_SIDECAR_TEST_STOP

fx=$(fixture kernel) || bail "fixture kernel did not start"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
SYSLOG_CAPS=00000004002c00c0 # SETUP_CAPS + SYSLOG (34)

# --- with --kernel: every output names kernel frames of the target's own threads ---
DOCKER_FLAME_SIDECAR_TEST_STOP=setup,process DOCKER_FLAME_TIMINGS=1 \
    timeout -k 10 150 docker flame --kernel -d 5 --format folded --format svg --format speedscope \
    --format pprof -o k1 "$fx" 2>err1 &
bg=$!
sc=$(sidecar_of "$fxid")
[ -n "$sc" ] || { kill "$bg"; bail "no sidecar appeared"; }
is "$(docker inspect -f '{{json .HostConfig.CapAdd}}' "$sc")" \
    '["SYS_ADMIN","SYS_PTRACE","SETUID","SETGID","SYS_CHROOT","SYSLOG"]' "--kernel: CapAdd has SYSLOG"
scpid=$(docker inspect -f '{{.State.Pid}}' "$sc")
# setup (after discovery): kallsyms copied, SYSLOG already gone from CapEff and CapPrm
if wait_stopped "$scpid" 60; then
    is "$(st "$scpid" CapEff)" "$SETUP_CAPS" "--kernel, setup: CapEff the five caps (SYSLOG dropped after the copy)"
    is "$(st "$scpid" CapPrm)" "$SETUP_CAPS" "--kernel, setup: CapPrm the five caps"
    is "$(st "$scpid" CapBnd)" "$SYSLOG_CAPS" "--kernel, setup: CapBnd = CapAdd (five + SYSLOG)"
    kill -CONT "$scpid"
else nok "--kernel: sidecar did not stop at the setup hook"; kill -CONT "$scpid" 2>/dev/null; fi
# wait for it to resume before waiting for the next stop
for ((i = 0; i < 100; i++)); do case "$(st "$scpid" State)" in T*) sleep 0.05 ;; *) break ;; esac; done
if wait_stopped "$scpid" 120; then
    is "$(st "$scpid" CapEff)" "$NONE" "--kernel, processing: CapEff 0 (SYSLOG dropped)"
    is "$(st "$scpid" CapPrm)" "$NONE" "--kernel, processing: CapPrm 0"
    check "--kernel, processing: the run's own uid ($(uid "$scpid"))" is_run_uid "$(uid "$scpid")"
    kill -CONT "$scpid"
else nok "--kernel: sidecar did not stop at the process hook"; kill -CONT "$scpid" 2>/dev/null; fi
wait_pid "$bg" 120; rc=$RC
is "$rc" 0 "--kernel: exit 0"
caps=$(sed -n 's/^docker flame: sidecar caps [^:]*: //p' err1 | head -1)
is "$caps" "{\"setup\":\"$SYSLOG_CAPS\",\"open\":\"$OPEN_CAPS\",\"record\":\"$NONE\",\"process\":\"$NONE\"}" \
    "--kernel: SYSLOG held at the start of setup only (S caps per phase)"
f=k1.folded
total=$(awk '{ t += $NF } END { print t + 0 }' "$f")
kern=$(awk '/_\[k\]/ { k += $NF } END { print k + 0 }' "$f")
check "samples recorded ($total)" test "$total" -ge 50
diag "samples with a kernel frame: $kern of $total ($((total ? 100 * kern / total : 0)) %)"
like "$(cat "$f")" 'FlameFixture\.readZeros[^;]*;([^;]*;)*[a-z_0-9.]+_\[k\]' \
    "the syscalls thread's stacks go on into kernel frames under FlameFixture.readZeros"
like "$(cat "$f")" '(read|sys_read|vfs_read|ksys_read)[^;]*_\[k\]' "the read(2) path is named"
# _[k] frames only ever follow user frames: the kernel is the leaf end of a stack
bad=$(grep -E '_\[k\];[^ ]*[^k]\]? ' "$f" | grep -vE '_\[k\](;[^;]*_\[k\])* [0-9]+$' | head -3)
is "$bad" "" "kernel frames are the leaf end of every stack"
unlike "$(grep -oE '[^;]*_\[k\]' "$f" | sort -u | grep -E '^(0x)?[0-9a-f]+_\[k\]$' | head -3)" '.' \
    "kernel frames have names, not raw addresses"
# the SVG shows names without the mark and gives kernel frames their own hue (orange: blue 0)
like "$(cat k1.svg 2>/dev/null)" '<title>do_syscall_64 \([^<]*</title><rect [^>]*fill="rgb\([0-9]+,[0-9]+,0\)"' \
    "SVG shows kernel frames, in orange"
like "$(cat k1.speedscope.json 2>/dev/null)" '_\[k\]' "speedscope shows kernel frames"
like "$(zcat k1.pb.gz 2>/dev/null | tr -c '[:print:]' '\n')" '_\[k\]' "pprof names kernel frames"
like "$(cat err1)" 'sidecar sampling [^:]*: cpu bpf' "recorded per CPU with the in-kernel filter"
# the BPF filter judges kernel samples by the interrupted task: the idle task and other
# processes stay out (their kernel frames would be idle loops and swapper)
unlike "$(cut -d';' -f1 "$f" | sort -u)" '^(swapper|kworker|ksoftirqd|dockerd|containerd)' \
    "no stack of the idle task or another process"
unlike "$(grep -oE '[^;]*_\[k\]' "$f" | sort -u)" '^(default_idle|native_safe_halt|intel_idle|cpu_idle|do_idle)' \
    "no idle-loop kernel frame"

# --- without --kernel: no kernel frame, no SYSLOG ---
DOCKER_FLAME_TIMINGS=1 timeout -k 10 150 docker flame -d 3 --format folded -o u1.folded "$fx" 2>err2
okif $? "without --kernel: exit 0"
is "$(grep -c '_\[k\]' u1.folded)" 0 "without --kernel: no kernel frame"
caps=$(sed -n 's/^docker flame: sidecar caps [^:]*: //p' err2 | head -1)
like "$caps" "^\\{\"setup\":\"$SETUP_CAPS\"" "without --kernel: no SYSLOG at setup"

# diff: kernel frames take part like any other (the kernel run against the user-only one)
timeout -k 5 60 docker flame diff k1.folded u1.folded -o d.svg 2>errd
okif $? "diff of a --kernel profile and a user-only one: exit 0"
# d.svg is drawn with AFTER's widths (user-only: no kernel frame), d.mirror.svg with BEFORE's
like "$(cat d.mirror.svg 2>/dev/null)" '<title>do_syscall_64 ' "diff (mirror, --kernel widths) shows the kernel frames"

# --- refused: a sidecar without CAP_SYSLOG sees kallsyms addresses as 0 (paranoid 2) ---
DOCKER_FLAME_SIDECAR_CAPS=SYS_ADMIN,SYS_PTRACE,SETUID,SETGID,SYS_CHROOT \
    timeout -k 10 120 docker flame --kernel -d 2 --format folded -o r1.folded "$fx" 2>err3
rc=$?
is "$rc" 6 "refused: exit 6 (perf not permitted)"
like "$(cat err3)" '--kernel refused: the kernel hides its symbol addresses.*profile without --kernel' \
    "refused: one clear line"
is "$(grep -c 'refused' err3)" 1 "refused: said once"
check "refused: no profile written" test ! -e r1.folded
is "$(sidecars_left)" 0 "no sidecar left"

# --- modes and verbs that cannot record kernel stacks: usage errors, before any container ---
timeout 30 docker flame --kernel --sampling thread "$fx" 2>err4
is "$?" 2 "--kernel --sampling thread: exit 2"
like "$(cat err4)" '--kernel needs per-CPU sampling' "--kernel --sampling thread: says why"
timeout 30 docker flame top --kernel --sampling thread "$fx" </dev/null >/dev/null 2>err5
is "$?" 2 "top --kernel --sampling thread: exit 2"
timeout 30 docker flame record --kernel "$fx" </dev/null >/dev/null 2>err6
is "$?" 2 "record --kernel: exit 2 (not supported with this verb)"
like "$(cat err6)" 'unknown flag: --kernel' "record --kernel: says so in one line"

# --- top --kernel: its windows carry kernel frames too (snapshots, --record) ---
timeout -k 10 300 docker flame top --kernel "$fx" --interval 1s --record top.folded >snap.txt 2>errt &
tpid=$!
top_ran() { [ "$(top_snapshots snap.txt)" -ge 3 ]; }
if wait_until 120 top_ran; then ok "top --kernel: snapshots"; else nok "top --kernel: snapshots"; fdiag "$(cat errt)"; fi
ctrl_c "$tpid"
wait "$tpid"
is "$?" 0 "top --kernel: exit 0 on Ctrl-C"
like "$(cat top.folded 2>/dev/null)" 'FlameFixture\.readZeros[^;]*;([^;]*;)*[a-z_0-9.]+_\[k\]' \
    "top --kernel --record: kernel frames under FlameFixture.readZeros"
is "$(sidecars_left)" 0 "top: no sidecar left"
like "$(docker flame --help)" '--kernel.*kernel stacks' "--help lists --kernel"
like "$(docker flame --help)" 'CAP_SYSLOG' "--help states the extra privilege"
done_testing
