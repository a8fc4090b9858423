#!/usr/bin/env bash
# The cpu-clock period and threads in step with it (docs/SIDECAR.md "Varied period"): a thread
# whose work repeats at exactly the sampling period is seen at its true share, not at one phase
# of its round. The `lockstep` fixture runs on CPU 0 only: threads step-a and step-b spin in the
# first and the second half of every round of 10,101,010 ns (the 99-Hz cpu-clock period) and
# sleep through the other half; each SIGHUP prints both threads' CPU ns. Known: step-a's share of
# the two threads' samples = its share of their CPU time (the JVM's own counts between two
# SIGHUPs around the recording), within 0.05 + 4 sd. Run twice:
# - per CPU (default): one CPU-wide timer, its period varied every 50 ms; with a fixed period every
#   tick of CPU 0 falls at one phase of the round: all the samples are step-a's or all step-b's
#   (0 or 1, seen). sd from the sample count n and the clustering of the ticks: the ticks between
#   two period changes are at phases tied to one another, so the variance is taken as at most
#   c x the binomial one with c = twice the ticks per change (n / period_changes), and
#   period_changes at least one per 200 ms.
# - per thread (--sampling thread, perf's own events): the period stays fixed, and need not vary
#   for this: each thread's timer runs only while the thread is on a CPU and keeps what is left
#   of its period across switches, so a thread gets one sample per 10.1 ms of ITS OWN CPU time
#   whatever its rhythm on the wall clock (sd taken as the binomial one, c = 1: the real spread
#   is +-1 sample a thread).
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 150"
D=8
fx=$(fixture lockstep) || bail "fixture lockstep did not start"
nsplit() { docker logs "$fx" 2>&1 | grep -c '^FlameFixture lockstep a='; }
split() { [ "$(nsplit)" -ge "$1" ]; }
docker kill -s HUP "$fx" >/dev/null
wait_until 30 split 1 || bail "no CPU split printed at SIGHUP"

one() { # SAMPLING (cpu: the per-CPU default; thread: --sampling thread)
    local how=$1 out=lk-$1 k rc f a0 b0 a1 b1 sa sb n changes ch truth share bound
    local args=()
    [ "$how" = cpu ] || args=(--sampling "$how")
    k=$(nsplit)
    mkdir -p "$out"
    $T docker --debug flame -d $D "${args[@]}" --format folded -o "$out/" "$fx" 2>"$out.err"; rc=$?
    docker kill -s HUP "$fx" >/dev/null
    is "$rc" 0 "$how: docker flame: exit 0"
    [ "$rc" = 0 ] || fdiag "$(tail -5 "$out.err")"
    wait_until 30 split $((k + 1)) || { nok "$how: no CPU split printed at the SIGHUP after it"; return; }
    f=$(ls "$out"/*.folded 2>/dev/null | head -1)
    [ -s "$f" ] || { nok "$how: no folded file"; return; }
    # the last two splits: the one before this recording and the one after it
    read -r a0 b0 a1 b1 < <(docker logs "$fx" 2>&1 | sed -nE 's/^FlameFixture lockstep a=([0-9]+) b=([0-9]+)$/\1 \2/p' |
        sed -n "$k,$((k + 1))p" | tr '\n' ' ')
    sa=$(grep -E '^step-a;.*FlameFixture\.stepSpin' "$f" | awk '{ s += $NF } END { print s + 0 }')
    sb=$(grep -E '^step-b;.*FlameFixture\.stepSpin' "$f" | awk '{ s += $NF } END { print s + 0 }')
    n=$((sa + sb))
    ch=0
    if [ "$how" = cpu ]; then
        changes=$(sed -nE 's/.*recorder: .*period_changes=([0-9]+).*/\1/p' "$out.err" | tail -1)
        like "$(cat "$out.err")" 'recorder: .*period_changes=[0-9]+' "$how: the recorder counts its period changes"
        check "$how: the period changed at least every 200 ms (${changes:-none} changes in ${D} s)" \
            test "${changes:-0}" -ge $((D * 5))
        # fewer changes than asked for widen the bound, never narrow it
        ch=$((${changes:-0} > D * 5 ? ${changes:-0} : D * 5))
    fi
    # enough that a thread in step with the ticks (share 0 or 1 for ~0.5) is outside the bound:
    # per CPU 100 (the clustering widens it), per thread 50 (+-0.33 at 50; the threads' CPU time
    # on a loaded CPU 0 gave 269-317 at load 10-17)
    check "$how: samples of both threads' spin ($sa + $sb)" test "$n" -ge $([ "$how" = cpu ] && echo 100 || echo 50)
    read -r truth share bound < <(awk -v a0="$a0" -v b0="$b0" -v a1="$a1" -v b1="$b1" -v sa="$sa" \
        -v n="$n" -v ch="$ch" 'BEGIN {
            da = a1 - a0; db = b1 - b0; t = (da + db) ? da / (da + db) : 0.5
            c = ch ? 2 * n / ch : 1; if (c < 1) c = 1
            s = n ? sa / n : -1
            printf "%.4f %.4f %.4f\n", t, s, 0.05 + 4 * sqrt(t * (1 - t) * c / (n ? n : 1)) }')
    diag "$how: step-a: $sa, step-b: $sb samples; CPU ns a $((a1 - a0)) b $((b1 - b0)); share $share, truth $truth, bound +-$bound, changes ${changes:-none}"
    check "$how: step-a's share of the samples ($share) is its share of the CPU time ($truth) +- $bound" \
        awk -v s="$share" -v t="$truth" -v b="$bound" 'BEGIN { d = s - t; exit !(d <= b && -d <= b) }'
}
one cpu
one thread
no_sidecar_left
done_testing
