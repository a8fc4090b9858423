#!/usr/bin/env bash
# `docker flame top` without a terminal: a plain snapshot per interval naming the fixture's hot
# method, SIGINT after two snapshots -> exit 0, --record writes folded stacks, nothing left in the
# target; and the target container stopping under top ends it cleanly (sidecar removed).
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
hp=$(host_pid "$fx")
HOT='FlameFixture\.(countPrimes|isPrime)'
snapshots() { [ "$(top_snapshots snap.txt)" -ge "$1" ]; }
no_sidecar() { [ "$(sidecars_of "$fid")" -eq 0 ]; }

timeout -k 10 300 docker flame top "$fx" --interval 1s --record rec.folded >snap.txt 2>err &
pid=$!
# Wait for the event the checks below need: a snapshot naming the hot method (on a loaded machine
# the first windows can be empty while the JVM is attached), after at least two snapshots.
named() { snapshots 2 && grep -Eq "$HOT" snap.txt; }
if wait_for 120 named; then ok "two snapshots, one naming the hot method"; else nok "two snapshots, one naming the hot method"; fdiag "$(cat err)"; fi
t_int=$(now_ms)
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "SIGINT: exit status 0 ($(( $(now_ms) - t_int )) ms)"
[ "$rc" = 0 ] && diag "$(cat err)" || fdiag "$(cat err)"
like "$(cat snap.txt)" "$HOT" "a snapshot names the hot method"
like "$(head -3 snap.txt)" 'SELF% +TOTAL% +SAMPLES +METHOD +JVM/THREAD' "snapshot table header"
unlike "$(cat snap.txt)" $'\e' "no terminal escapes in the plain output"
if [ -s rec.folded ]; then
    ok "--record wrote rec.folded"
    like "$(cat rec.folded)" "$HOT" "recorded stacks name the hot method"
    unlike "$(cat rec.folded)" '^[^ ]+$' "every recorded line is 'stack count'"
    like "$(tail -1 rec.folded)" ' [0-9]+$' "recorded lines end with a count"
else
    nok "--record wrote rec.folded"
fi
ls rec.folded.tmp-* >/dev/null 2>&1 && nok "no temporary record file left" || ok "no temporary record file left"
is "$(sidecars_of "$fid")" 0 "no sidecar left"
is "$(flame_mounts "$hp")" 0 "no docker-flame mount left in the target"

# The container stops under top: top must end (not hang) and remove its sidecar.
timeout -k 10 300 docker flame top "$fx" --interval 1s >snap2.txt 2>err2 &
pid=$!
wait_for 120 grep -q '^--- docker flame top' snap2.txt && ok "second top running" || { nok "second top running"; fdiag "$(cat err2)"; }
docker stop -t 2 "$fx" >/dev/null
t_stop=$(now_ms)
gone() { ! kill -0 $pid 2>/dev/null; }
if wait_for 60 gone; then
    wait $pid; rc=$?
    ok "top ended $(( $(now_ms) - t_stop )) ms after the container stopped (exit $rc)"
    [ "$rc" -ne 0 ] && ok "non-zero exit when the container went away" || nok "non-zero exit when the container went away"
    like "$(cat err2)" 'ended|stopped|not running|E ' "says why it ended"
else
    nok "top ended after the container stopped"; kill -TERM $pid
fi
diag "$(cat err2)"
wait_for 30 no_sidecar && ok "container stopped: no sidecar left" || nok "container stopped: no sidecar left"
done_testing
