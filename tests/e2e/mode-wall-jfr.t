#!/usr/bin/env bash
# --mode wall against answers known by construction and against JFR in the same JVM and window
# (docs/MODES.md "Cross-checks"). The `wall` fixture (java/WallFixture.java) has one thread per
# way of spending time, each all its time in one stack: w-sleep (Thread.sleep), w-spin
# (computing), w-wait (Object.wait on a monitor nobody notifies), w-park (parked under a fair
# ReentrantLock's lock, held by w-hold, which sleeps with it held), w-pipe (blocked reading a
# pipe that w-write writes a byte into every 50 ms), and w-mix, ~2/3 asleep (Thread.sleep 20-60
# ms, then 10-30 ms of computing) that prints its own split at each SIGHUP. JFR is started
# through the JVM's attach socket (the host JDK's jcmd, as the JVM's user) with the blocking
# events at threshold 0, and read with the host JDK's `jfr` (tests/e2e/jfr-wall.py clips every
# event to the window, exact integers).
# Checked:
# - each thread's on-CPU + off-CPU time is the window: +-5 % (less the share of the off-CPU
#   samples the ring refused, if any: time missing from the totals), widened by 4 sd of the off-CPU
#   sampler's noise (its probability p from the recorder's counters: a thread off CPU for OFF ns
#   in intervals of at most ~60 ms has sd <= sqrt((1 - p) / p * OFF * 60 ms) / window); at p = 1
#   (a quiet machine: the fixture switches ~200 times a second, the sampler takes ~250) the bound
#   is the goal itself;
# - each thread's blocking (or computing) stack has >= 95 % of its time (100 % by construction),
#   w-mix's sleep within 5 points (+ 4 sd) of the split the fixture measured itself;
# - where JFR has an event for the wait (jdk.ThreadSleep, jdk.JavaMonitorWait, jdk.ThreadPark),
#   its share of the window within 5 points (+ 4 sd) of ours; the pipe read has no JFR event
#   (jdk.SocketRead and jdk.FileRead are not emitted for a java.nio.channels.Pipe), the spin none
#   (JFR's execution samples are not a time).
# Run on the host's JDK 17 and on Temurin 25 (its own fixture image, its own jcmd and jfr, as
# modes-jfr.t): the blocking calls' frames and JFR's events differ between them (JDK 25's
# Thread.sleep goes through sleepNanos/sleepNanos0, Object.wait through wait0).
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 120"
D=6
W=${D}000000000
JDK17=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
command -v setpriv >/dev/null || bail "no setpriv (util-linux)"

# sum of the values of the folded lines matching $2 (extended regex), ns
sum() { grep -E -- "$2" "$1" | awk '{ s += $NF } END { printf "%.0f\n", s + 0 }'; }
calc() { awk "BEGIN { printf \"%.4f\", $1 }"; }
within() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
jfr_ns() { awk -v t="$1" -v e="$2" '$1 == t && $2 == e { print $3 }' jfr.sums | awk '{ s += $1 } END { printf "%.0f\n", s + 0 }'; }
prob() { awk -v so="${1:-0}" -v sa="${2:-0}" 'BEGIN { p = so > 0 ? sa / so : 1; printf "%.4f", (p > 1 ? 1 : p) }'; }
# the attach socket, as the JVM's own user (10001, which exists only in the image)
jc() { setpriv --reuid 10001 --regid 10001 --clear-groups "$JDK/bin/jcmd" -J-XX:-UsePerfData "$hp" "$@"; }
# the fixture's SIGHUP marks: "WallFixture mark ms=... mix_sleep_ns=... mix_spin_ns=..."
marks() { docker logs "$fx" 2>/dev/null | grep -c 'WallFixture mark'; }
nmarks() { [ "$(marks)" -ge "$1" ]; }

# THREAD STACK_RE JFR_EVENT: the thread's total, its stack's share, JFR's share
one() {
    local t=$1 re=$2 ev=$3 tot offs offr st sd tol share jn js
    tot=$(sum wall.wall.folded "^$t;")
    offs=$(sum wall.wall.folded "^$t;.*;\[sleeping\] ")
    offr=$(sum wall.wall.folded "^$t;.*;\[runnable\] ")
    st=$(sum wall.wall.folded "^$t;$re")
    # each interval (<= ~60 ms) sampled with its kind's p, weighing d / p: var <= (1-p)/p * d * sum
    sd=$(calc "sqrt((1 - $ps) / $ps * $offs * 60e6 + (1 - $pr) / $pr * $offr * 60e6) / $W")
    tol=$(calc "0.05 + 4 * $sd")
    share=$(calc "$st / ($tot + 1)")
    diag "$L: $t: on+off $(calc "$tot / $W") x the window (sleeping $(calc "$offs / $W"), runnable $(calc "$offr / $W"), sd $sd); its stack $share"
    check "$L: $t: on + off CPU time within -$tol-$short..+$tol of the window ($(calc "$tot / $W"))" \
        within "$(calc "$tot / $W")" "$(calc "1 - $tol - $short")" "$(calc "1 + $tol")"
    [ "$t" = w-mix ] || check "$L: $t: its stack ($re) has >= 95 % (- 4 sd) of its time ($share)" within "$share" "$(calc "0.95 - 4 * $sd")" 1.0001
    if [ -n "$ev" ]; then
        jn=$(jfr_ns "$t" "$ev")
        js=$(calc "$jn / ($jw * 1e6)")
        diag "$L: $t: JFR $ev $js of its window; ours $(calc "$st / $W") of ours"
        check "$L: $t: JFR's $ev share ($js) within $tol of ours ($(calc "$st / $W"))" \
            within "$(calc "$js - $st / $W")" "-$tol" "$(calc "$tol + $short")"
    fi
    eval "tol_${t//-/_}=$tol st_${t//-/_}=$st tot_${t//-/_}=$tot"
}

check_one() { # LABEL JDK IMAGE: every check on that JDK's fixture, in the directory LABEL
    L=$1 JDK=$2
    local image=$3 out bg rc line so sa ss sss sp ssp lost m0 s0 p0 m1 s1 p1 want got
    [ -x "$JDK/bin/jcmd" ] && [ -x "$JDK/bin/jfr" ] || { nok "$L: no jcmd/jfr in $JDK"; return; }
    mkdir -p "$TMP/$L" && cd "$TMP/$L" || { nok "$L: no directory"; return; }
    fx=$(FLAME_FIXTURE_IMAGE=$image fixture wall) || { nok "$L: fixture wall did not start"; return; }
    hp=$(host_pid "$fx")
    out=$(jc JFR.start name=wall settings=profile jdk.ThreadSleep#threshold=0ms jdk.JavaMonitorWait#threshold=0ms \
        jdk.ThreadPark#threshold=0ms 2>&1)
    like "$out" 'Started recording' "$L: JFR started through the attach socket (jcmd as the JVM's user)" || true

    $T docker --debug flame -d $D --mode wall --format folded -o wall.folded "$fx" 2>wall.err &
    bg=$!
    if ! wait_until 60 sidecar_recording "$fx"; then
        kill "$bg"; wait "$bg"
        nok "$L: the profile records within 60 s: $(tail -3 wall.err)"; docker rm -f "$fx" >/dev/null; return
    fi
    docker kill -s HUP "$fx" >/dev/null
    wait "$bg"; rc=$?
    docker kill -s HUP "$fx" >/dev/null
    is "$rc" 0 "$L: --mode wall -d $D: exit 0"
    if [ ! -s wall.wall.folded ]; then
        fdiag "$(tail -5 wall.err)"; nok "$L: no wall.wall.folded"; docker rm -f "$fx" >/dev/null; return
    fi
    wait_until 20 nmarks 2 || { nok "$L: no two marks in the fixture's log"; docker rm -f "$fx" >/dev/null; return; }
    docker logs "$fx" 2>/dev/null | grep 'WallFixture mark' | tail -2 >marks.txt
    read -r m0 s0 p0 m1 s1 p1 <<<"$(sed 's/.*ms=\([0-9]*\) mix_sleep_ns=\([0-9]*\) mix_spin_ns=\([0-9]*\).*/\1 \2 \3/' marks.txt | tr '\n' ' ')"
    out=$(jc JFR.stop name=wall filename=/tmp/wall.jfr 2>&1)
    like "$out" 'wall.jfr' "$L: JFR stopped, its recording written" || true
    if ! docker cp "$fx:/tmp/wall.jfr" r.jfr 2>cp.err; then
        nok "$L: no JFR recording: $(cat cp.err)"; docker rm -f "$fx" >/dev/null; return
    fi
    "$JDK/bin/jfr" print --json --stack-depth 1 --events jdk.ThreadSleep,jdk.JavaMonitorWait,jdk.ThreadPark r.jfr >r.json 2>jfr.err
    python3 "$ROOT/tests/e2e/jfr-wall.py" "$m0" "$m1" <r.json >jfr.sums 2>>jfr.err || fdiag "$(tail -3 jfr.err)"

    # The off-CPU sampler's probability for each kind of switch-out: to sleep, preempted (each
    # kind steered to its own rate; the recorder's counters "slept=SWITCHOUTS/SAMPLED preempted=...")
    line=$(grep 'recorder: off-CPU:' wall.err)
    diag "$L: ${line#*recorder: }"
    like "$line" ' slept=[0-9]+/[0-9]+ preempted=[0-9]+/[0-9]+' "$L: the recorder counts its switch-outs by kind"
    read -r so sa <<<"$(sed -n 's/.* switch-outs=\([0-9]*\) sampled=\([0-9]*\).*/\1 \2/p' <<<"$line")"
    read -r ss sss <<<"$(sed -n 's/.* slept=\([0-9]*\)\/\([0-9]*\).*/\1 \2/p' <<<"$line")"
    read -r sp ssp <<<"$(sed -n 's/.* preempted=\([0-9]*\)\/\([0-9]*\).*/\1 \2/p' <<<"$line")"
    # samples the ring refused (a recorder late on a loaded machine) are time missing: the
    # totals may be short by their share
    read -r lost <<<"$(sed -n 's/.* lost=\([0-9]*\).*/\1/p' <<<"$line")"
    short=$(awk -v l="${lost:-0}" -v s="${sa:-0}" 'BEGIN { printf "%.4f", (l + s > 0 ? l / (l + s) : 0) }')
    # without the counters by kind (an older recorder: one probability for all), that one
    ps=$(prob "${ss:-$so}" "${sss:-$sa}") pr=$(prob "${sp:-$so}" "${ssp:-$sa}")
    jw=$((m1 - m0))
    diag "$L: window ${D} s; off-CPU sampler: $sa of $so switch-outs ($short of the samples refused by the ring); to sleep ${sss:-?} of ${ss:-?} (p $ps), preempted ${ssp:-?} of ${sp:-?} (p $pr);" \
        "JFR window (the fixture's marks) $jw ms; load $(cut -d' ' -f1-3 /proc/loadavg)"

    one w-sleep '.*WallFixture\.sleepLoop.*;java\.lang\.Thread\.sleep' jdk.ThreadSleep
    one w-spin '.*WallFixture\.spinLoop.*;WallFixture\.spin' ''
    one w-wait '.*WallFixture\.waitLoop.*;java\.lang\.Object\.wait' jdk.JavaMonitorWait
    one w-park '.*WallFixture\.parkLoop.*;java\.util\.concurrent\.locks\.ReentrantLock\.lock.*park' jdk.ThreadPark
    one w-hold '.*WallFixture\.holdLoop.*;java\.lang\.Thread\.sleep' jdk.ThreadSleep
    one w-pipe '.*WallFixture\.pipeLoop.*;sun\.nio\.ch\.SourceChannelImpl\.read' ''
    one w-write '.*WallFixture\.writeLoop.*;java\.lang\.Thread\.sleep' jdk.ThreadSleep
    one w-mix '.*WallFixture\.mixLoop.*;java\.lang\.Thread\.sleep' jdk.ThreadSleep
    # w-mix: its sleep's share of its time against the split it measured itself between the marks
    want=$(calc "($s1 - $s0) / ($s1 - $s0 + $p1 - $p0)")
    got=$(calc "$st_w_mix / ($tot_w_mix + 1)")
    check "$L: w-mix: its sleep's share ($got) within $tol_w_mix of the split it measured ($want)" \
        within "$(calc "$got - $want")" "-$tol_w_mix" "$tol_w_mix"
    like "$(grep '^w-pipe;' wall.wall.folded)" 'SourceChannelImpl\.read.*;\[sleeping\] ' "$L: the pipe read is [sleeping]"
    is "$(grep -c '^w-pipe ' jfr.sums)" 0 "$L: JFR has no event of the pipe read (no matching event: noted, not compared)"
    docker rm -f "$fx" >/dev/null
    cd "$TMP" || true
}

check_one jdk17 "$JDK17" flame-fixture-jvm:latest
if jdk25_fixture_image jfr; then
    check_one temurin25 "$JDK25" "$IMAGE25"
fi
no_sidecar_left
done_testing
