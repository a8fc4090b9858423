#!/usr/bin/env bash
# `docker flame record --mode cpu,alloc` (docs/RECORD.md "Profile types", docs/MODES.md "Several
# modes in one run"): one recording stores, for every interval, a cpu window (the sidecar's
# samples) and an alloc window (the agent's table, flushed at the window's end), each with its
# type. The `modes` fixture (java/ModesFixture.java) allocates long[6] in ModesFixture.smallSite
# and byte[4080] in ModesFixture.largeSite all the time (and computes while at it): every window
# has CPU samples and allocations. Checked: windows of both types stored (ls --mode), each
# stored-window line counts samples and bytes; `show` (cpu) has the fixture's methods in
# samples and no allocated-class leaf; `show --mode alloc` has the classes as leaves in bytes;
# nothing left in the target's /tmp. Waits are on events (windows in the store).
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture modes) || bail "fixture modes did not start"
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
hp=$(target_pid "$fx") || bail "no pid for the fixture"
DB=$TMP/rec.db
iso() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
windows() { docker flame ls --mode "$1" --store "${2:-$DB}" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
has_windows() { [ "$(windows "$1")" -ge "$2" ] 2>/dev/null; }
modes_left() { ls -A "/proc/$hp/root/tmp" 2>/dev/null | grep -c '\.modes$'; }

t0=$(now_ms)
timeout -k 10 300 docker flame record "$fx" --mode cpu,alloc --window 2s --store "$DB" >out 2>err &
pid=$!
if wait_for 90 has_windows alloc 3 && wait_for 30 has_windows cpu 3; then
    ok "cpu and alloc windows are stored ($(windows cpu) cpu, $(windows alloc) alloc)"
else
    nok "cpu and alloc windows are stored"; fdiag "$(cat err)"
fi
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "record --mode cpu,alloc ends with Ctrl-C: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 err)"
nb=$(grep -cE 'window [0-9]+ stored \([0-9.]+ s, [1-9][0-9,]* samples, [1-9][0-9,]* bytes\)' err)
check "each whole window has samples and bytes of its own ($nb of $(grep -c 'window [0-9]* stored' err))" test "$nb" -ge 2
ls_out=$(docker flame ls --store "$DB" 2>&1)
diag "$ls_out"
is "$(echo "$ls_out" | awk -v c="$fname" '$1 == c { print $6 }' | sort -u | tr '\n' ' ')" 'alloc cpu ' \
    "ls: the fixture's windows are of types cpu and alloc"

docker flame show "$fx" --since "$(iso "$t0")" --store "$DB" --format folded -o c.folded 2>show.err; rc=$?
is "$rc" 0 "show (cpu): exit 0 ($(cat show.err))"
check "cpu: the fixture's allocating methods are on CPU" test "$(sum c.folded 'ModesFixture\.(smallSite|largeSite)')" -gt 0
is "$(grep -c '_\[a\] [0-9]*$' c.folded)" 0 "cpu: no allocated-class leaf (nothing of alloc's windows)"
tc=$(sum c.folded)
check "cpu: in samples ($tc <= 99 Hz x the recording x 2 CPUs)" test "$tc" -le $(((($(now_ms) - t0) / 1000 + 1) * 99 * $(nproc)))
docker flame show "$fx" --mode alloc --since "$(iso "$t0")" --store "$DB" --format folded -o a.folded 2>show.err; rc=$?
is "$rc" 0 "show --mode alloc: exit 0 ($(cat show.err))"
check "alloc: long[] under smallSite" test "$(sum a.folded 'ModesFixture\.smallSite;long\[\]_\[a\]$')" -gt 0
check "alloc: byte[] under largeSite" test "$(sum a.folded 'ModesFixture\.largeSite;byte\[\]_\[a\]$')" -gt 0
is "$(modes_left)" 0 "the target's /tmp: no samples file left"
left=$(docker ps -aq --filter label=com.docker-flame.sidecar=1 --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | wc -l)
is "$left" 0 "no sidecar left"
done_testing
