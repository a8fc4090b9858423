#!/usr/bin/env bash
# The cpu-clock period, varied (docs/SIDECAR.md "Varied period"): a thread whose work repeats at
# exactly the sampling period is seen at its true share, not at one phase of its round. The
# `lockstep` fixture runs on CPU 0 only: threads step-a and step-b spin in the first and the
# second half of every round of 10,101,010 ns (the 99-Hz cpu-clock period) and sleep through the
# other half; each SIGHUP prints both threads' CPU ns. With a fixed period every tick of CPU 0
# falls at one phase of the round: all the samples are step-a's or all step-b's (0 or 1, seen).
# Known: step-a's share of the two threads' samples = its share of their CPU time (the JVM's own
# counts between two SIGHUPs around the recording), within 0.05 + 4 sd. sd from the sample
# count n and the clustering of the ticks: the ticks between two period changes are at phases
# tied to one another, so the variance is taken as at most c x the binomial one with c = twice
# the ticks per change (n / period_changes), and period_changes at least one per 200 ms.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 150"
D=8
fx=$(fixture lockstep) || bail "fixture lockstep did not start"
split() { docker logs "$fx" 2>&1 | grep -c '^FlameFixture lockstep a=' | grep -qx "$1"; }
docker kill -s HUP "$fx" >/dev/null
wait_until 30 split 1 || bail "no CPU split printed at SIGHUP"
mkdir -p lk
$T docker --debug flame -d $D --format folded -o lk/ "$fx" 2>lk.err; rc=$?
docker kill -s HUP "$fx" >/dev/null
is "$rc" 0 "docker flame: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 lk.err)"
wait_until 30 split 2 || bail "no second CPU split printed at SIGHUP"
f=$(ls lk/*.folded 2>/dev/null | head -1)
[ -s "$f" ] || bail "no folded file"
read -r a0 b0 a1 b1 < <(docker logs "$fx" 2>&1 | sed -nE 's/^FlameFixture lockstep a=([0-9]+) b=([0-9]+)$/\1 \2/p' |
    tr '\n' ' ')
sa=$(grep -E '^step-a;.*FlameFixture\.stepSpin' "$f" | awk '{ s += $NF } END { print s + 0 }')
sb=$(grep -E '^step-b;.*FlameFixture\.stepSpin' "$f" | awk '{ s += $NF } END { print s + 0 }')
n=$((sa + sb))
changes=$(sed -nE 's/.*recorder: .*period_changes=([0-9]+).*/\1/p' lk.err | tail -1)
like "$(cat lk.err)" 'recorder: .*period_changes=[0-9]+' "the recorder counts its period changes"
check "the period changed at least every 200 ms (${changes:-none} changes in ${D} s)" \
    test "${changes:-0}" -ge $((D * 5))
check "samples of both threads' spin ($sa + $sb)" test "$n" -ge 100
# fewer changes than asked for widen the bound, never narrow it
ch=$(( ${changes:-0} > D * 5 ? ${changes:-0} : D * 5 ))
read -r truth share bound < <(awk -v a0="$a0" -v b0="$b0" -v a1="$a1" -v b1="$b1" -v sa="$sa" \
    -v n="$n" -v ch="$ch" 'BEGIN {
        da = a1 - a0; db = b1 - b0; t = (da + db) ? da / (da + db) : 0.5
        c = 2 * n / ch; if (c < 1) c = 1
        s = n ? sa / n : -1
        printf "%.4f %.4f %.4f\n", t, s, 0.05 + 4 * sqrt(t * (1 - t) * c / (n ? n : 1)) }')
diag "step-a: $sa, step-b: $sb samples; CPU ns a $((a1 - a0)) b $((b1 - b0)); share $share, truth $truth, bound +-$bound, changes ${changes:-none}"
check "step-a's share of the samples ($share) is its share of the CPU time ($truth) +- $bound" \
    awk -v s="$share" -v t="$truth" -v b="$bound" 'BEGIN { d = s - t; exit !(d <= b && -d <= b) }'
left=$(docker ps -aq --filter label=com.docker-flame.sidecar=1 --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | wc -l)
is "$left" 0 "no sidecar left"
done_testing
