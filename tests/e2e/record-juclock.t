#!/usr/bin/env bash
# `docker flame record --mode lock` and `docker flame top --mode lock` with java.util.concurrent
# waits (docs/MODES.md "java.util.concurrent locks", docs/RECORD.md "Profile types"): each
# window's recorder takes off-CPU samples instead of cpu-clock ones, and the window's lock
# profile has the ReentrantLock waits found among them beside the agent's monitors, in ns.
# The `juc` fixture (java/JucFixture.java), known by construction: three threads take turns on
# one fair ReentrantLock holding it 10 ms (two wait at any time: ~2 x the window of waiting),
# three on a monitor the same way (~2 x, the agent's part), an idle pool thread (no lock wait).
# Checked: lock windows are stored; the range of the first windows and the range of the later
# ones each have the ReentrantLock's wait stack (per window, not once at the end); the stored
# ReentrantLock waits over all stored windows are ~2 x their length and ~50 % of the lock
# profile; `top --mode lock --record` has the same stack.
# Bounds: as tests/e2e/mode-juclock.t's (its header has the reasoning): ~250 off-CPU samples a
# second over the fixture's ~1000 switch-outs, ~50 of them a second in the ReentrantLock's waits,
# each weighing its time off CPU / p; over >= 4 windows of 3 s (>= ~600 such samples, a relative
# error of ~5 %, heavy-tailed under load) 1.0-3.0 x the windows' length and a 25-75 % share are
# > 8 errors wide. The test says how many windows and ns it had.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture juc) || bail "fixture juc did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
DB=$TMP/juc.db
T="timeout -k 10 150"
iso() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
windows() { docker flame ls --mode lock --store "$DB" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
has_windows() { [ "$(windows)" -ge "$1" ] 2>/dev/null; }

L='java\.util\.concurrent\.locks\.'
juc_re="^juc-[0-2];.*JucFixture\.jucContend(_\[[a-z]+\])?;${L}ReentrantLock\.lock(_\[[a-z]+\])?;.*${L}AbstractQueuedSynchronizer\.acquire[^;]*;${L}ReentrantLock_\[l\]( [0-9]+)?\$"
mon_re='^mon-[0-2];.*JucFixture\.monContend(_\[[a-z]+\])?;JucFixture\$Monitor_\[l\]( [0-9]+)?$'

# --- record --mode lock: windows of 3 s ---
t0=$(now_ms)
timeout -k 10 300 docker flame record "$fx" --mode lock --window 3s --store "$DB" >out 2>err &
pid=$!
if wait_for 90 has_windows 2; then ok "lock windows are stored ($(windows))"; else nok "lock windows are stored"; fdiag "$(cat err)"; fi
t1=$(now_ms)
n1=$(windows)
wait_for 90 has_windows $((n1 + 2)) || fdiag "$(cat err)"
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "the recording ends with Ctrl-C: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 err)"
diag "$(grep -E 'window [0-9]+ stored' err)"
unlike "$(cat err)" 'java\.util\.concurrent locks not seen' "no line says the j.u.c. locks are not seen"
# the length of the stored windows, from their lines ("window N stored (3.0 s, ... ns)")
secs=$(sed -n 's/.*window [0-9]* stored (\([0-9.]*\) s, .*/\1/p' err | awk '{ s += $1 } END { printf "%.3f\n", s }')
nw=$(grep -c 'window [0-9]* stored' err)
check "at least 4 windows stored ($nw, $secs s)" test "$nw" -ge 4

# the first windows' range and the later ones': the waits are in each (per window)
docker flame show "$fx" --mode lock --since "$(iso "$t0")" --until "$(iso "$t1")" --store "$DB" --format folded -o a.folded 2>a.err; rc=$?
is "$rc" 0 "show --mode lock of the first windows: exit 0 ($(cat a.err))"
like "$(cat a.folded 2>/dev/null)" "$juc_re" "the first windows: a ReentrantLock wait under JucFixture.jucContend and AQS's acquire"
docker flame show "$fx" --mode lock --since "$(iso "$t1")" --store "$DB" --format folded -o b.folded 2>b.err; rc=$?
is "$rc" 0 "show --mode lock of the later windows: exit 0 ($(cat b.err))"
like "$(cat b.folded 2>/dev/null)" "$juc_re" "the later windows: the ReentrantLock's waits too"

# all of them: the sizes by construction
docker flame show "$fx" --mode lock --since "$(iso "$t0")" --store "$DB" --format folded -o l.folded 2>l.err; rc=$?
is "$rc" 0 "show --mode lock: exit 0 ($(cat l.err))"
juc=$(sum l.folded "$juc_re")
mon=$(sum l.folded "$mon_re")
all=$(sum l.folded '.')
idle=$(sum l.folded '^idle-0;')
win_ns=$(awk -v s="$secs" 'BEGIN { printf "%.0f\n", s * 1e9 }')
diag "ReentrantLock $juc ns, monitor $mon ns, all $all ns in $nw windows of $secs s"
check "the ReentrantLock's waits: ~2 x the windows (1.0-3.0: $(ratio "$juc" "$win_ns"))" within "$juc" "$win_ns" 1.0 3.0
check "the monitor's contention is still there (1.0-3.0 x: $(ratio "$mon" "$win_ns"))" within "$mon" "$win_ns" 1.0 3.0
check "the ReentrantLock's share: 25-75 % (50 % by construction: $(ratio "$juc" "$all"))" within "$juc" "$all" 0.25 0.75
check "the idle pool thread: <= 2 % of the lock profile ($(ratio "$idle" "$all"))" within "$idle" "$all" 0 0.02
unlike "$(cat l.folded 2>/dev/null)" 'ConditionObject|Thread\.sleep|LockSupport\.park' \
    "no Condition's await, no sleep, no park frame in the stored lock profile"

# --- top --mode lock: the live view and its --record ---
timeout -k 10 300 docker flame top "$fx" --mode lock --interval 2s --record top.folded >snap.txt 2>terr &
pid=$!
named() { [ "$(grep -c '^--- docker flame top' snap.txt 2>/dev/null)" -ge 2 ] && grep -q 'ReentrantLock' snap.txt; }
if wait_for 90 named; then ok "two top snapshots, one naming the ReentrantLock"; else nok "two top snapshots, one naming the ReentrantLock"; fdiag "$(cat terr)" "$(tail -30 snap.txt)"; fi
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "top: Ctrl-C: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat terr)"
like "$(cat top.folded 2>/dev/null)" "$juc_re" "top --record: the ReentrantLock's waits"
like "$(cat top.folded 2>/dev/null)" "$mon_re" "top --record: the monitor's too"

# --- least privilege: the windows' recorder loads the off-CPU program where it opens its events
# and holds no capability while it records (the TEST-ONLY hooks stop the first window's recorder
# at both: tests/e2e/privilege-phases.t) ---
st() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null | head -1; }
scpid() { docker inspect -f '{{.State.Pid}}' "$(docker ps -q --filter label=com.docker-flame.sidecar=1 --filter "label=com.docker-flame.target=$fid" | head -1)" 2>/dev/null; }
stopped_rec() { # the sidecar's stopped child (the recorder)
    local p c; p=$(scpid) && [ "${p:-0}" -gt 0 ] || return 1
    for c in $(cat /proc/"$p"/task/*/children 2>/dev/null); do
        [ "$(cat /proc/"$c"/comm 2>/dev/null)" = flame-sidecar ] || continue
        case "$(st "$c" State)" in T*) echo "$c"; return 0 ;; esac
    done
    return 1
}
has_stopped_rec() { stopped_rec >/dev/null; }
DOCKER_FLAME_SIDECAR_TEST_STOP=open,record timeout -k 10 150 docker flame record "$fx" --mode lock \
    --window 2s --store "$TMP/p.db" >/dev/null 2>perr &
pid=$!
if wait_for 60 has_stopped_rec && rp=$(stopped_rec); then
    like "$(st "$rp" CapEff)" '^(0000000000280000|000000c000080000)$' "open (recorder): what the off-CPU program needs, as for --mode offcpu ($(st "$rp" CapEff))"
    kill -CONT "$rp"
    wait_for 30 has_stopped_rec || true
    is "$(st "$rp" State | cut -c1)" T "record (recorder): stopped at the record hook"
    is "$(st "$rp" CapEff)" 0000000000000000 "record (recorder): CapEff none"
    is "$(st "$rp" CapPrm)" 0000000000000000 "record (recorder): CapPrm none"
    # (BPF_PROG_TYPE_RAW_TRACEPOINT = 17: the off-CPU program on sched_switch, not the filter)
    check "record (recorder): the off-CPU program is loaded" sh -c "grep -qx 'prog_type:[[:space:]]*17' /proc/$rp/fdinfo/*"
    kill -CONT "$rp"
else
    nok "open (recorder): the first window's recorder stopped at the open hook"; fdiag "$(cat perr)"
fi
stored_p() { grep -q 'window [0-9]* stored' perr; }
wait_for 60 stored_p || fdiag "$(cat perr)"
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "the held recording ends with Ctrl-C: exit 0"

# --- the off-CPU program refused: the windows keep the monitors, one line says why, exit 0 ---
DB3=$TMP/r.db
n3() { docker flame ls --mode lock --store "$DB3" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
has3() { [ "$(n3)" -ge 2 ] 2>/dev/null; }
DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON=1 timeout -k 10 150 docker flame record "$fx" --mode lock \
    --window 2s --store "$DB3" >/dev/null 2>rerr &
pid=$!
wait_for 90 has3 || fdiag "$(cat rerr)"
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "off-CPU refused: exit 0 (monitors need no BPF)"
like "$(cat rerr)" 'java\.util\.concurrent locks not seen, monitors only: their off-CPU samples were refused' \
    "off-CPU refused: says the j.u.c. locks are not seen, and why"
docker flame show "$fx" --mode lock --store "$DB3" --format folded -o r.folded 2>/dev/null
like "$(cat r.folded 2>/dev/null)" "$mon_re" "off-CPU refused: the monitors' windows are stored"
unlike "$(cat r.folded 2>/dev/null)" 'ReentrantLock_\[l\]' "off-CPU refused: no ReentrantLock"

is "$(sidecars_of "$fid")" 0 "no sidecar left"
done_testing
