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
# `record --mode cpu,wall,offcpu` (docs/RECORD.md "Several of cpu, wall and offcpu"): one wall
# recording whose every window the sidecar splits by each sample's thread state, as a one-shot
# profile's (tests/e2e/mode-multi.t): a window of each type per interval. The `sleeper` fixture
# (a thread that sleeps 6-10 ms and spins 1-3 ms, a worker that spins): known by construction,
# whatever the load: the stored cpu windows' stacks are the stored wall windows' [running]
# stacks, each cpu sample 1e9/Hz ns of wall (+-10 %: a period varied per sample averages out),
# and the stored offcpu windows' stacks and total are wall's [runnable]+[sleeping] ones (to the
# 3 ns a sample the tag takes off); as many windows of each type; no tag in cpu or offcpu.
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

# --- cpu,wall,offcpu: every window split by thread state, a stored window of each type ---
sx=$(fixture sleeper) || bail "fixture sleeper did not start"
sname=$(docker inspect -f '{{.Name}}' "$sx"); sname=${sname#/}
DB2=$TMP/split.db
HZ=49 # given explicitly: record's default may change
swindows() { docker flame ls --mode "$1" --store "$DB2" 2>/dev/null | awk -v c="$sname" '$1 == c { print $(NF - 3) }'; }
has_swindows() { [ "$(swindows "$1")" -ge "$2" ] 2>/dev/null; }
# a folded file's stacks without a trailing state tag, their values summed per stack, sorted
untag() { sed -E 's/;\[(running|runnable|sleeping)\]( [0-9]+)$/\2/' "$1" |
    awk '{ v = $NF; $NF = ""; s[$0] += v } END { for (k in s) printf "%s%.0f\n", k, s[k] }' | sort; }
stacks() { untag "$1" | sed -E 's/ [0-9]+$//'; }
t1=$(now_ms)
timeout -k 10 300 docker flame record "$sx" --mode cpu,wall,offcpu -F $HZ --window 2s --store "$DB2" >out2 2>err2 &
pid=$!
if wait_for 90 has_swindows offcpu 2 && wait_for 30 has_swindows cpu 2 && wait_for 30 has_swindows wall 2; then
    ok "cpu, wall and offcpu windows are stored ($(swindows cpu) cpu, $(swindows wall) wall, $(swindows offcpu) offcpu)"
else
    nok "cpu, wall and offcpu windows are stored"; fdiag "$(cat err2)"
fi
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "record --mode cpu,wall,offcpu ends with Ctrl-C: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 err2)"
nb=$(grep -cE 'window [0-9]+ stored \([0-9.]+ s, [1-9][0-9,]* samples, [1-9][0-9,]* ns wall, [1-9][0-9,]* ns offcpu\)' err2)
check "each whole window has samples, wall ns and offcpu ns of its own ($nb of $(grep -c 'window [0-9]* stored' err2))" test "$nb" -ge 2
nc=$(swindows cpu); nw=$(swindows wall); no=$(swindows offcpu)
check "a window of each type per interval ($nc cpu, $nw wall, $no offcpu)" test "${nc:-0}" -ge 2 -a "$nc" = "$nw" -a "$nw" = "$no"
for m in cpu wall offcpu; do
    docker flame show "$sx" --mode $m --since "$(iso "$t1")" --store "$DB2" --format folded -o s.$m.folded 2>show.err; rc=$?
    is "$rc" 0 "show --mode $m: exit 0 ($(cat show.err))"
done
[ -s s.cpu.folded ] && [ -s s.wall.folded ] && [ -s s.offcpu.folded ] || bail "a stored type of cpu, wall or offcpu is empty"
like "$(cat s.cpu.folded)" '^worker-0;.*FlameFixture\.(countPrimes|isPrime)' "cpu: the busy worker's method"
is "$(grep -cE ';\[(running|runnable|sleeping)\] [0-9]+$' s.cpu.folded s.offcpu.folded | awk -F: '{ s += $NF } END { print s }')" 0 \
    "cpu, offcpu: no thread-state tag"
like "$(cat s.offcpu.folded)" '^sleeper;.*FlameFixture\.sleepy[^;]*;java\.lang\.Thread\.sleep;' "offcpu: the sleep's stack"
grep -E ';\[running\] [0-9]+$' s.wall.folded >run.folded
grep -E ';\[(runnable|sleeping)\] [0-9]+$' s.wall.folded >off.folded
is "$(diff <(stacks run.folded) <(stacks s.cpu.folded) | wc -l)" 0 "stored cpu's stacks are stored wall's [running] stacks"
runns=$(sum run.folded)
csamp=$(sum s.cpu.folded)
check "each stored cpu sample weighs 1e9/Hz ns in wall ($runns ns / $csamp samples)" \
    within "$runns" "$(awk -v n="$csamp" -v hz=$HZ 'BEGIN { printf "%.0f", n * 1e9 / hz }')" 0.9 1.1
is "$(diff <(stacks off.folded) <(stacks s.offcpu.folded) | wc -l)" 0 "stored offcpu's stacks are stored wall's [runnable] and [sleeping] ones"
offns=$(sum off.folded)
ons=$(sum s.offcpu.folded)
check "stored offcpu's total is stored wall's off-CPU part ($ons vs $offns ns)" within "$ons" "$offns" 0.999 1.001

no_sidecar_left
done_testing
