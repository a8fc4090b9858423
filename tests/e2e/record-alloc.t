#!/usr/bin/env bash
# `docker flame record --mode alloc|lock` (docs/RECORD.md "Profile types"): at each window's end
# the sidecar asks the JVM's agent to hand its table over (`flush`) and stores the window's
# allocation (bytes) or lock (ns) stacks with the window's type. The `modes` fixture
# (java/ModesFixture.java) allocates long[6] in ModesFixture.smallSite and byte[4080] in
# ModesFixture.largeSite, 3:1 in bytes, all the time, and three threads take turns on one
# ModesFixture$Monitor: so every window has allocations whose leaves are those classes under
# those methods, and lock waits on that monitor. Checked: the windows are stored of type alloc
# (lock), several of them, each with bytes; `show --mode alloc` has the classes as leaves (both
# sites; shapes, not tight ratios: a window holds a few thousand samples, but the machine may be
# loaded); `ls` lists the type; `diff --mode alloc` of two stored ranges works; nothing is left
# in the target's /tmp. And a failure: while a one-shot profile holds the JVM's allocation
# sampler, `record --mode alloc` fails in one line with exit 6 and stores nothing; so it does
# when the target planted a symlink where the agent writes its samples (not written through).
# Waits are on events: windows in the store (ls), the one-shot profile's sidecar recording.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture modes) || bail "fixture modes did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
hp=$(target_pid "$fx") || bail "no pid for the fixture"
DB=$TMP/rec.db
iso() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
# the windows of type $1 stored for the fixture in store $2 (ls: one line per JVM and type)
windows() { docker flame ls --mode "$1" --store "${2:-$DB}" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
has_windows() { [ "$(windows "$1")" -ge "$2" ] 2>/dev/null; }
# sum of the counts of the folded lines matching an awk regex
modes_left() { ls -A "/proc/$hp/root/tmp" 2>/dev/null | grep -c '\.modes$'; }
T="timeout -k 10 150"

# (several modes together, cpu,alloc and cpu,wall,offcpu: tests/e2e/record-multi.t)

# --- alloc windows, a mark between two ranges ---
t0=$(now_ms)
timeout -k 10 300 docker flame record "$fx" --mode alloc --window 2s --store "$DB" >out 2>err &
pid=$!
if wait_for 90 has_windows alloc 2; then
    ok "alloc windows are stored ($(windows alloc))"
else
    nok "alloc windows are stored"; fdiag "$(cat err)"
fi
t1=$(now_ms)
n1=$(windows alloc)
wait_for 90 has_windows alloc $((n1 + 2)) || fdiag "$(cat err)"
t2=$(now_ms)
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "the recording ends with Ctrl-C: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 err)"
like "$(cat err)" 'window [0-9]+ stored \([0-9.]+ s, [0-9,]+ bytes\)' "each stored window is counted in bytes"
like "$(cat err)" "docker flame show $fname --mode alloc --since" "the closing line says how to show them"
# every window but the one Ctrl-C cut short has bytes: a flush per window, not one table at the end
nb=$(grep -cE 'window [0-9]+ stored \([0-9.]+ s, [1-9][0-9,]* bytes\)' err)
check "every whole window has its own bytes ($nb of $(grep -c 'window [0-9]* stored' err) windows)" test "$nb" -ge 3

ls_out=$(docker flame ls --store "$DB" 2>&1)
diag "$ls_out"
like "$(echo "$ls_out" | awk -v c="$fname" '$1 == c { print $6 }' | sort -u | tr '\n' ' ')" '^alloc $' \
    "ls: the fixture's windows are of type alloc"
is "$(windows cpu)" "" "ls --mode cpu: none of them (nothing stored as cpu)"
is "$(modes_left)" 0 "the target's /tmp: no samples file left"

out=$(docker flame show "$fx" --since "$(iso "$t0")" --store "$DB" -o "$TMP/cpu.svg" 2>&1); rc=$?
is "$rc" 8 "show without --mode (cpu): nothing stored, exit 8"
like "$out" 'of type alloc' "says the store has them as alloc"

docker flame show "$fx" --mode alloc --since "$(iso "$t0")" --store "$DB" --format folded -o a.folded 2>show.err; rc=$?
is "$rc" 0 "show --mode alloc --format folded: exit 0 ($(cat show.err))"
small=$(sum a.folded 'ModesFixture\.smallSite;long\[\]_\[a\]$')
large=$(sum a.folded 'ModesFixture\.largeSite;byte\[\]_\[a\]$')
all=$(sum a.folded)
diag "alloc: smallSite long[] $small B, largeSite byte[] $large B, all $all B"
check "the leaf is the allocated class: long[] under smallSite ($small B)" test "$small" -gt 0
check "the leaf is the allocated class: byte[] under largeSite ($large B)" test "$large" -gt 0
check "the two sites are most of the bytes" within "$((small + large))" "$all" 0.8 1.01
check "smallSite allocates more than largeSite (3:1 by construction)" test "$small" -gt "$large"
docker flame show "$fx" --mode alloc --since "$(iso "$t0")" --store "$DB" -o a.svg 2>/dev/null; rc=$?
is "$rc" 0 "show --mode alloc -o a.svg: exit 0"
like "$(head -c 4096 a.svg)" 'profile-type: alloc' "the SVG carries its type"
like "$(grep -o 'allocations ([a-z]*)' a.svg | head -1)" 'allocations \(bytes\)' "its title says bytes"

before="$fx@$(iso "$t0")..$(iso "$t1")"
after="$fx@$(iso "$t1")..$(iso "$t2")"
DOCKER_FLAME_STORE=$DB docker flame diff --mode alloc "$before" "$after" --single -o d.svg >movers.txt 2>diff.err; rc=$?
is "$rc" 0 "diff --mode alloc of two stored ranges: exit 0 ($(cat diff.err))"
like "$(head -c 4096 d.svg)" 'profile-type: alloc' "the differential is of type alloc"

# --- lock windows ---
timeout -k 10 300 docker flame record "$fx" --mode lock --window 2s --store "$DB" >out 2>lerr &
pid=$!
wait_for 90 has_windows lock 2 || fdiag "$(cat lerr)"
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "record --mode lock: exit 0"
like "$(cat lerr)" 'window [0-9]+ stored \([0-9.]+ s, [1-9][0-9,]* ns\)' "lock windows are counted in ns"
docker flame show "$fx" --mode lock --since "$(iso "$t0")" --store "$DB" --format folded -o l.folded 2>/dev/null; rc=$?
is "$rc" 0 "show --mode lock: exit 0"
check "lock: the monitor's class is the leaf under ModesFixture.contend" \
    test "$(sum l.folded 'ModesFixture\.contend;ModesFixture\$Monitor_\[l\]$')" -gt 0
is "$(sum l.folded 'Solo_\[l\]$')" 0 "lock: the uncontended monitor is absent"

# --- refused: another profile holds the JVM's allocation sampler ---
DB2=$TMP/second.db
$T docker flame -q -d 60 --mode alloc -o hold.folded "$fx" 2>hold.err &
hpid=$!
check "a one-shot alloc profile records (its agent holds the sampler)" wait_for 90 sidecar_recording
$T docker flame record -q "$fx" --mode alloc --window 2s --store "$DB2" >out 2>rerr; rc=$?
is "$rc" 6 "record --mode alloc while another agent holds the sampler: exit 6"
diag "$(cat rerr)"
like "$(cat rerr)" "docker flame record: $fname: --mode alloc refused in JVM pid [0-9]+: the JVM's allocation sampler is held by another agent" \
    "one line says alloc was refused, in which JVM and why"
is "$(grep -c 'refused' rerr)" 1 "that one line only says it (no perf wording, no window line)"
unlike "$(cat rerr)" 'perf is not permitted|window [0-9]+ stored' "not taken for a perf refusal; no window stored"
is "$(windows alloc "$DB2")$(windows cpu "$DB2")" "" "nothing stored, of any type"
ctrl_c "$hpid"
wait "$hpid"
is "$(modes_left)" 0 "the target's /tmp: no samples file left"

# --- refused: the target planted a symlink where the agent's samples go ---
nspid=$(docker logs "$fx" 2>&1 | sed -n 's/.*ModesFixture ready pid=\([0-9]*\).*/\1/p' | head -1)
jpid=$(pgrep -f ModesFixture | while read -r p; do [ "$(readlink "/proc/$p/ns/pid")" = "$(readlink "/proc/$hp/ns/pid")" ] && echo "$p"; done | head -1)
juid=$(stat -c %u "/proc/${jpid:-$hp}") jgid=$(stat -c %g "/proc/${jpid:-$hp}")
tmpd=/proc/$hp/root/tmp
modes_name=perf-$nspid.$(agent_stable_tag).modes
printf 'victim\n' >"$tmpd/victim" && chown "$juid:$jgid" "$tmpd/victim" &&
    ln -s /tmp/victim "$tmpd/$modes_name" && chown -h "$juid:$jgid" "$tmpd/$modes_name" ||
    nok "planted a link at /tmp/$modes_name"
DB3=$TMP/third.db
$T docker flame record -q "$fx" --mode alloc --window 2s --store "$DB3" >out 2>perr; rc=$?
is "$rc" 6 "record --mode alloc with a link planted at the samples name: exit 6"
diag "$(cat perr)"
like "$(cat perr)" "$fname: --mode alloc refused in JVM pid [0-9]+: the agent could not write its samples to /tmp/$modes_name" \
    "one line says alloc was refused, and which file"
is "$(grep -c 'refused' perr)" 1 "that one line only says it"
is "$(cat "$tmpd/victim")" victim "the file the link points to is unchanged (not written through)"
is "$(readlink "$tmpd/$modes_name")" /tmp/victim "the link is left as the target planted it"
is "$(windows alloc "$DB3")" "" "no alloc window stored"
rm -f "$tmpd/$modes_name" "$tmpd/victim"
check "the JVM runs on" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
is "$(sidecars_of "$fid")" 0 "no sidecar left"
done_testing
