#!/usr/bin/env bash
# `docker flame top --mode alloc` (docs/TOP.md): the live view in bytes allocated per second. The
# `modes` fixture (java/ModesFixture.java) allocates long[6] in ModesFixture.smallSite and
# byte[4080] in ModesFixture.largeSite all the time, so every window has allocations: a plain
# snapshot's header says MB/s allocated and its count column is BYTES, a snapshot names one of
# the allocating sites, Ctrl-C ends it with exit 0, --record writes the allocations (the classes
# as leaves, in bytes), nothing is left in the target's /tmp. `--mode cpu,alloc` is refused
# (one type per view). The sidecar's warnings are printed on stderr (`--mode lock --sampling
# thread`: no java.util.concurrent waits, said at once).
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture modes) || bail "fixture modes did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
hp=$(target_pid "$fx") || bail "no pid for the fixture"
SITE='ModesFixture\.(smallSite|largeSite)'
modes_left() { ls -A "/proc/$hp/root/tmp" 2>/dev/null | grep -c '\.modes$'; }

out=$(timeout -k 10 60 docker flame top --mode cpu,alloc "$fx" 2>&1); rc=$?
is "$rc" 2 "top --mode cpu,alloc: usage error"
like "$out" 'one of cpu, wall, offcpu, alloc and lock at a time' "says why ($out)"

timeout -k 10 300 docker flame top "$fx" --mode alloc --interval 1s --record rec.folded >snap.txt 2>err &
pid=$!
# the event the checks need: a snapshot naming an allocating site, after two snapshots
named() { [ "$(grep -c '^--- docker flame top' snap.txt 2>/dev/null)" -ge 2 ] && grep -Eq "$SITE" snap.txt; }
if wait_for 120 named; then ok "two snapshots, one naming an allocating site"; else nok "two snapshots, one naming an allocating site"; fdiag "$(cat err)"; fi
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "Ctrl-C: exit 0"
[ "$rc" = 0 ] && diag "$(cat err)" || fdiag "$(cat err)"
like "$(grep -m1 '^--- docker flame top' snap.txt)" ' [0-9.]+ MB/s allocated ' "the header's rate is in MB/s allocated"
like "$(cat snap.txt)" 'SELF% +TOTAL% +BYTES +METHOD +JVM/THREAD' "the count column is BYTES"
like "$(cat snap.txt)" 'bytes in window: [0-9,]+' "the window's total is in bytes"
unlike "$(cat snap.txt)" 'samples/s' "no samples/s"
like "$(cat rec.folded 2>/dev/null)" 'ModesFixture\.smallSite;long\[\]_\[a\] [0-9]+' "--record: long[] allocated under smallSite"
like "$(cat rec.folded 2>/dev/null)" 'ModesFixture\.largeSite;byte\[\]_\[a\] [0-9]+' "--record: byte[] allocated under largeSite"
like "$(cat err)" 'wrote rec\.folded \([0-9,]+ bytes\)' "says what --record wrote, in bytes"

# the sidecar's warnings reach the user: `--mode lock --sampling thread` has no off-CPU samples,
# so no java.util.concurrent waits, which the sidecar says at once (a W line); plain snapshots
# on stdout, the warning on stderr as it comes
timeout -k 10 300 docker flame top "$fx" --mode lock --sampling thread --interval 1s >snap2.txt 2>err2 &
pid=$!
warned() { grep -q 'warning: --mode lock: java.util.concurrent locks not seen' err2; }
snap() { [ "$(grep -c '^--- docker flame top' snap2.txt 2>/dev/null)" -ge 1 ]; }
wait_for 120 snap
wait_for 30 warned
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "top --mode lock --sampling thread: Ctrl-C: exit 0"
like "$(cat err2)" "docker flame top: [^:]+: warning: --mode lock: java\.util\.concurrent locks not seen in this run, monitors only \(they come from off-CPU samples, which need per-CPU sampling\)" \
    "top prints the sidecar's warning, one line naming the container"
is "$(grep -c 'warning: --mode lock' snap2.txt)" 0 "the warning is not in the snapshots (stdout)"

is "$(modes_left)" 0 "no samples file left in the target's /tmp"
is "$(sidecars_of "$fid")" 0 "no sidecar left"
done_testing
