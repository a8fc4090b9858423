#!/usr/bin/env bash
# --mode offcpu and --mode wall (docs/MODES.md, docs/SIDECAR.md "Off-CPU and wall-clock"): the
# sidecar's BPF program on the raw sched_switch tracepoint samples the target's switch-outs, the
# recorder weighs each by its time off CPU. The `sleeper` fixture (no -XX:+PreserveFramePointer)
# has a thread "sleeper" in FlameFixture.sleepy: Thread.sleep(6-10 ms), then 1-3 ms of spinning
# (random lengths, 8 + 2 ms on average), again and again; a thread "worker-0" spins all the
# time. Known by construction:
#   - offcpu: a whole stack (thread root, start_thread ... FlameFixture.sleepy, Thread.sleep,
#     down to the futex wait) carries most of the sleeper's window; nothing of a process that
#     sleeps and wakes all the time on the host and in another container (their name, frames);
#   - wall: each of the two threads' on-CPU + off-CPU time is its whole window (+-20 %), the
#     sleeper's sleep is 50-90 % of it (80 % by construction; a loaded machine preempts the spin,
#     which lengthens each round without adding sleep); every stack ends in its thread state:
#     the sleep's in [sleeping], the worker's computing in [running], and the worker, which never
#     waits for anything, almost never [sleeping] (on a loaded machine it is often [runnable]).
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 150"
D=6
fx=$(fixture sleeper) || bail "fixture sleeper did not start"

# a process that switches all the time, recognisable by its name and function
cat >napper.c <<'EOF2'
#include <sys/prctl.h>
#include <time.h>
__attribute__((noinline)) static void napperXq_nap(void)
{
    struct timespec t = {0, 1000000};
    nanosleep(&t, 0);
}
int main(void)
{
    prctl(PR_SET_NAME, "napperXq");
    time_t end = time(NULL) + 90;
    while (time(NULL) < end)
        napperXq_nap();
    return 0;
}
EOF2
gcc -O1 -fno-omit-frame-pointer -static -o napper napper.c || bail "cannot build the napper"
./napper &
hostnap=$!
docker run -d --network none --label docker-flame-test=1 --label "docker-flame-test.owner=$FLAME_TEST_OWNER" \
    -v "$TMP/napper:/napper:ro" flame-fixture-jvm:latest /napper >/dev/null || bail "napper container did not start"

# sum of the values of the folded lines matching $2 in file $1, in ns
sum() { grep -E -- "$2" "$1" | awk '{ s += $NF } END { printf "%.0f\n", s + 0 }'; }
# a/b within [lo, hi] (awk: floating point)

# --- offcpu ---
$T docker --debug flame -d $D --mode offcpu --format folded -o off.folded "$fx" 2>off.err; rc=$?
is "$rc" 0 "--mode offcpu: exit 0"
[ -s off.offcpu.folded ] || { fdiag "$(tail -5 off.err)"; bail "no off.offcpu.folded"; }
like "$(cat off.err)" 'off-CPU: [0-9,]+ ns in [0-9]+ stacks' "the summary says off-CPU time in ns"
sleep_re='^sleeper;.*start_thread;.*FlameFixture\.sleepy[^;]*;java\.lang\.Thread\.sleep;.*(futex|pthread_cond)'
like "$(cat off.offcpu.folded)" "$sleep_re" \
    "the sleep's whole stack: the thread, start_thread, FlameFixture.sleepy, Thread.sleep, the futex wait (no -XX:+PreserveFramePointer)"
slept=$(sum off.offcpu.folded "$sleep_re")
check "under Thread.sleep: 50-95 % of the ${D}-s window ($(ratio "$slept" ${D}000000000))" \
    within "$slept" ${D}000000000 0.5 0.95
unlike "$(cat off.offcpu.folded)" 'napper|swapper' "nothing of the napping host process or container"
# least privilege: the program is loaded while opening the events (SYS_ADMIN + SYS_PTRACE, or
# PERFMON + BPF + SYS_PTRACE where the engine grants them), nothing while recording
caps=$(sed -n 's/.*sidecar caps [^:]*: //p' off.err)
like "$caps" '"open":"0000000000280000"|"open":"000000c000080000"' "S caps open: what opening the events needs ($caps)"
like "$caps" '"record":"0000000000000000"' "S caps record: none"
roots=$(cut -d';' -f1 off.offcpu.folded | sort -u | tr '\n' ' ')
unlike "$roots" '^(bash|sleep|dockerd|containerd)' "every stack is rooted in one of the target's threads ($roots)"

# --- wall ---
$T docker --debug flame -d $D --mode wall --format folded -o wall.folded "$fx" 2>wall.err; rc=$?
is "$rc" 0 "--mode wall: exit 0"
[ -s wall.wall.folded ] || { fdiag "$(tail -5 wall.err)"; bail "no wall.wall.folded"; }
sl=$(sum wall.wall.folded '^sleeper;')
wk=$(sum wall.wall.folded '^worker-0;')
ws=$(sum wall.wall.folded "$sleep_re")
# The off-CPU part is an estimate: each switch-out is sampled with a probability p the recorder
# steers to ~250 samples/s for the whole JVM, and weighs 1/p times its interval. A quiet machine
# has fewer switch-outs than that (p = 1: the sleeps are all counted, +-20 % is for the edges
# and the on-CPU sampling); on a loaded one the preemptions (the worker's: thousands a second)
# are a kind of their own with its own p, and the sleeps' p stays near what their own number
# gives.
# The bound widens by 4 sd of that count (p from the recorder's counters), never narrows.
# (the sleeps are switch-outs to sleep: that kind's counters, "slept=SWITCHOUTS/SAMPLED")
read -r so sa <<<"$(sed -n 's/.*recorder: off-CPU: .* slept=\([0-9]*\)\/\([0-9]*\).*/\1 \2/p' wall.err)"
tol=$(awk -v so="${so:-0}" -v sa="${sa:-0}" -v ws="$ws" -v w=${D}000000000 'BEGIN {
    p = so > 0 ? sa / so : 1; if (p > 1) p = 1
    n = p * ws / 8e6; sd = n > 0 ? sqrt((1 - p) / n) : 1
    printf "%.3f", 0.2 + 4 * sd * ws / w }')
lo=$(awk -v t="$tol" 'BEGIN { printf "%.3f", 1 - t }'); hi=$(awk -v t="$tol" 'BEGIN { printf "%.3f", 1 + t }')
check "the sleeper's on + off CPU time is its window ($(ratio "$sl" ${D}000000000), $lo-$hi: $sa of $so switch-outs sampled)" \
    within "$sl" ${D}000000000 "$lo" "$hi"
# The worker's off-CPU part is mostly preemptions (waits for a CPU on a loaded host), sampled at
# their own, lower rate (~50/s for the whole JVM): its bound widens by 4 sd of that count, from
# the preemptions' p and the worker's runnable time (intervals of at most ~60 ms: sd <=
# sqrt((1 - p) / p * runnable * 60 ms)), never narrows.
read -r po pa <<<"$(sed -n 's/.*recorder: off-CPU: .* preempted=\([0-9]*\)\/\([0-9]*\).*/\1 \2/p' wall.err)"
wkq=$(sum wall.wall.folded '^worker-0;.*;\[runnable\] ')
wtol=$(awk -v so="${po:-0}" -v sa="${pa:-0}" -v r="$wkq" -v w=${D}000000000 'BEGIN {
    p = so > 0 ? sa / so : 1; if (p > 1) p = 1; if (p <= 0) p = 1
    printf "%.3f", 0.2 + 4 * sqrt((1 - p) / p * r * 60e6) / w }')
wlo=$(awk -v t="$wtol" 'BEGIN { printf "%.3f", 1 - t }'); whi=$(awk -v t="$wtol" 'BEGIN { printf "%.3f", 1 + t }')
check "the busy worker's too ($(ratio "$wk" ${D}000000000), $wlo-$whi: runnable $(ratio "$wkq" ${D}000000000), $pa of $po preemptions sampled)" \
    within "$wk" ${D}000000000 "$wlo" "$whi"
check "the sleeper's sleep: 50-90 % of its time ($(ratio "$ws" "$sl"))" within "$ws" "$sl" 0.5 0.9
like "$(cat wall.wall.folded)" '^worker-0;.*FlameFixture\.(countPrimes|isPrime)' "the worker's on-CPU stacks are in"
untagged=$(grep -cvE ';\[(running|runnable|sleeping)\] [0-9]+$' wall.wall.folded)
is "$untagged" 0 "every wall stack ends in its thread state"
wss=$(sum wall.wall.folded "$sleep_re.*;\[sleeping\] ")
check "the sleep's stacks: >= 90 % [sleeping] ($(ratio "$wss" "$ws"))" within "$wss" "$ws" 0.9 1.0
wkr=$(sum wall.wall.folded '^worker-0;.*FlameFixture\.(countPrimes|isPrime).*;\[running\] ')
check "the worker's computing is [running] ($(ratio "$wkr" "$wk") of its time)" within "$wkr" "$wk" 0.05 1.0
wks=$(sum wall.wall.folded '^worker-0;.*;\[sleeping\] ')
check "the worker (never waits): <= 10 % [sleeping] ($(ratio "$wks" "$wk"))" within "$wks" "$wk" 0 0.1

# --- refusals ---
out=$($T docker flame --mode offcpu --sampling thread "$fx" 2>&1); rc=$?
is "$rc" 2 "--mode offcpu --sampling thread: usage error"
out=$($T docker flame --offcpu-min 1ms "$fx" 2>&1); rc=$?
is "$rc" 2 "--offcpu-min without --mode offcpu: usage error"

# --- --offcpu-min: the sleeps (6-10 ms) stay, shorter intervals are left out (the recorder counts
# them: the JVM's threads hand work over in well under 5 ms) ---
$T docker --debug flame -d 4 --mode offcpu --offcpu-min 5ms --format folded -o min.folded "$fx" 2>min.err; rc=$?
is "$rc" 0 "--offcpu-min 5ms: exit 0"
like "$(cat min.offcpu.folded 2>/dev/null)" "$sleep_re" "the 6-10-ms sleeps are kept"
like "$(grep 'recorder: off-CPU:' min.err)" ' short=[1-9]' "shorter intervals were left out"

kill "$hostnap" 2>/dev/null; wait "$hostnap" 2>/dev/null
no_sidecar_left
done_testing
