#!/usr/bin/env bash
# --mode lock's java.util.concurrent waits (docs/MODES.md "java.util.concurrent locks"): the
# sidecar's off-CPU samples whose Java frames park under a lock's acquire, weighed by their time
# off CPU, in the same lock profile as the agent's monitors. The `juc` fixture
# (java/JucFixture.java) has, known by construction:
#   - three threads taking turns on one ReentrantLock, each holding it 10 ms: two wait at any time,
#     ~2 x the recording's length of waiting, under JucFixture.jucContend and the lock's acquire,
#     the leaf the lock's class;
#   - three threads doing the same on a monitor (the agent's part: still there, ~2 x too);
#   - a pool thread idle in ThreadPoolExecutor.getTask (woken every 20 ms for an empty task): it
#     parks all the time, in the off-CPU profile, but no lock waits for it.
# With cpu (cpu-clock samples) or the off-CPU program refused: the monitors alone and a line why.
# Bounds: the off-CPU samples are a Bernoulli sample (probability p) of the target's switch-outs,
# p steered to ~250 samples a second, each weighing its time off CPU / p. The lock's waits are
# ~20 ms (two holders of 10 ms) at ~200 switch-outs a second of the fixture's ~1000: ~2 x D / 20 ms
# waits, p x that sampled (~300 in 6 s), a relative error of ~sqrt((1-p)/(n p)) ~ 5 %. What makes
# it heavy-tailed is a loaded machine: a wait stretched to 200 ms weighs 200 ms / p. The 10-ms hold
# keeps p high (~0.3; with 2 ms it was ~0.09: such a stall then weighed 2 s, and one run of 4 s
# came out at 3.1 x the window); the bounds (0.5x-1.5x of the constructed 2 x, a share of 25-75 %
# for the 50 %) are > 8 errors wide, and the test says how many samples it had (diag) and fails
# below 100 (no basis for a bound).
# Contentions (pprof's contentions/count, read by `go tool pprof -sample_index=contentions`): each
# sample stands for 1/p parks, summed per stack. By construction every lock() of the fair lock
# parks once (two threads are queued whenever a holder comes back) and waits for the two holds
# before it (~20 ms): the delay per contention is ~20 ms (it is the weighted mean of the sampled
# waits, steady: the bound 12-80 ms leaves room for holds stretched 4x on a loaded machine), and
# holds of >= 10 ms allow at most ~100 contentions a second (bound 1.35 x: > 4 errors of ~7 %).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"
real_plugin_setup
T="timeout -k 10 120"
D=6
fx=$(fixture juc) || bail "fixture juc did not start"

L='java\.util\.concurrent\.locks\.'
# (frames may carry their marks: _[i] inlined, _[int] interpreted; lines their count)
juc_re="^juc-[0-2];.*JucFixture\.jucContend(_\[[a-z]+\])?;${L}ReentrantLock\.lock(_\[[a-z]+\])?;.*${L}AbstractQueuedSynchronizer\.acquire[^;]*;${L}ReentrantLock_\[l\]( [0-9]+)?\$"
mon_re='^mon-[0-2];.*JucFixture\.monContend(_\[[a-z]+\])?;JucFixture\$Monitor_\[l\]( [0-9]+)?$'

# --- --mode lock alone: the recorder takes off-CPU samples, not cpu-clock ones ---
$T docker --debug flame -d $D --mode lock --format folded,pprof -o l.folded "$fx" 2>l.err; rc=$?
diag "$(grep -E 'sidecar timings|recorder: off-CPU' l.err)"
is "$rc" 0 "--mode lock: exit 0"
[ -s l.lock.folded ] || { fdiag "$(tail -5 l.err)"; bail "no l.lock.folded"; }
sampled=$(sed -n 's/.*recorder: off-CPU: .* sampled=\([0-9]*\).*/\1/p' l.err | head -1)
diag "off-CPU samples: ${sampled:-none}"
check "the recorder took off-CPU samples (>= 100: ${sampled:-none})" test "${sampled:-0}" -ge 100
like "$(cat l.lock.folded)" "$juc_re" \
    "a ReentrantLock wait: the thread, JucFixture.jucContend, ReentrantLock.lock, AQS's acquire, the lock's class as the leaf"
juc=$(sum l.lock.folded "$juc_re")
mon=$(sum l.lock.folded "$mon_re")
all=$(sum l.lock.folded '.')
diag "ReentrantLock $juc ns, monitor $mon ns, all $all ns in ${D} s"
check "the ReentrantLock's waits: ~2 x the window (1.0-3.0: $(ratio "$juc" ${D}000000000))" \
    within "$juc" ${D}000000000 1.0 3.0
check "the monitor's contention is still there (1.0-3.0 x the window: $(ratio "$mon" ${D}000000000))" \
    within "$mon" ${D}000000000 1.0 3.0
check "the two are >= 95 % of the lock profile ($(ratio $((juc + mon)) "$all"))" within $((juc + mon)) "$all" 0.95 1.01
check "the ReentrantLock's share: 25-75 % (50 % by construction: $(ratio "$juc" "$all"))" within "$juc" "$all" 0.25 0.75
idle=$(sum l.lock.folded '^idle-0;')
check "the idle pool thread: <= 2 % of the lock profile ($(ratio "$idle" "$all"))" within "$idle" "$all" 0 0.02
# (a pool thread blocked on its queue's own lock under getTask would be a lock wait: not excluded)
unlike "$(cat l.lock.folded)" 'ConditionObject|Thread\.sleep|LockSupport\.park' \
    "no Condition's await, no sleep, no park frame in the lock profile"
# least privilege: the off-CPU program is loaded where the events are opened, nothing after
caps=$(sed -n 's/.*sidecar caps [^:]*: //p' l.err)
like "$caps" '"open":"0000000000280000"|"open":"000000c000080000"' "S caps open: what opening the events needs, as for --mode offcpu"
like "$caps" '"record":"0000000000000000"' "S caps record: none ($caps)"
like "$(cat l.err)" 'lock contention: [0-9,]+ ns in [0-9]+ stacks' "the summary gives the lock profile in ns"

# --- contentions of the ReentrantLock, as go tool pprof reads them (the monitors' from the agent) ---
if have_go; then
    go_env
    # "Showing nodes accounting for N, P% of T total": N the focused samples' sum
    focused() { go tool pprof -sample_index="$1" -focus="$2" -top l.lock.pb.gz 2>/dev/null |
        sed -n 's/^Showing nodes accounting for \([0-9][0-9]*\),.*/\1/p' | head -1; }
    cont=$(focused contentions 'JucFixture\.jucContend')
    mcont=$(focused contentions 'JucFixture\.monContend')
    diag "contentions: ReentrantLock ${cont:-none}, monitor ${mcont:-none} in ${D} s"
    check "the ReentrantLock's contentions counted (> 0: ${cont:-none})" test "${cont:-0}" -gt 0
    check "its delay per contention ~20 ms, two holds (12-80 ms: $(ratio "$juc" "${cont:-0}") ns)" \
        within "$juc" "${cont:-0}" 12000000 80000000
    check "at most one contention per 10-ms hold (<= 1.35 x ${D}00: ${cont:-none})" \
        within "${cont:-0}" ${D}00 0.01 1.35
    check "the monitor's contentions still there (> 0: ${mcont:-none})" test "${mcont:-0}" -gt 0
else
    nok "go tool pprof is missing (install.sh --test-deps installs golang-go)"
fi

# --- offcpu and lock in one run: the idle thread is parked (seen), yet no lock wait ---
$T docker flame -d 4 --mode offcpu,lock --format folded -o b.folded "$fx" 2>b.err; rc=$?
is "$rc" 0 "--mode offcpu,lock: exit 0"
like "$(cat b.offcpu.folded 2>/dev/null)" '^idle-0;.*ThreadPoolExecutor\.getTask;.*ConditionObject\.await' \
    "offcpu: the idle pool thread parked in getTask (a Condition's await)"
like "$(cat b.lock.folded 2>/dev/null)" "$juc_re" "lock: the ReentrantLock's waits"
ball=$(sum b.lock.folded '.'); bidle=$(sum b.lock.folded '^idle-0;')
check "lock: the idle pool thread <= 2 % ($(ratio "$bidle" "$ball"))" within "$bidle" "$ball" 0 0.02

# --- cpu and lock: cpu-clock samples, so monitors only, and a line says so ---
$T docker flame -d 3 --mode cpu,lock --format folded -o c.folded "$fx" 2>c.err; rc=$?
is "$rc" 0 "--mode cpu,lock: exit 0"
like "$(cat c.err)" 'java\.util\.concurrent locks not seen in this run, monitors only' "says the j.u.c. locks are not seen"
like "$(cat c.lock.folded 2>/dev/null)" "$mon_re" "the monitor's contention is there"
grep -Eq "$mon_re" c.lock.folded 2>/dev/null || fdiag "$(cat c.err)"
unlike "$(cat c.lock.folded 2>/dev/null)" 'ReentrantLock_\[l\]' "no ReentrantLock"

# --- the off-CPU program refused (no CAP_PERFMON for the recorder): monitors only, one line why,
# exit 0 as before (monitors need no BPF), never an empty or refused lock profile ---
DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON=1 $T docker flame -d 2 --mode lock --format folded -o r.folded "$fx" 2>r.err; rc=$?
is "$rc" 0 "--mode lock, off-CPU refused: exit 0"
like "$(cat r.err)" 'java\.util\.concurrent locks not seen, monitors only: their off-CPU samples were refused' \
    "says the j.u.c. locks are not seen, and why"
like "$(cat r.lock.folded 2>/dev/null)" "$mon_re" "the monitor's contention is there"

# --- Temurin 25 (its AQS and Thread.run differ from 17's): the same lock stacks ---
if jdk25_fixture_image; then
    fx25=$(FLAME_FIXTURE_IMAGE=$IMAGE25 fixture juc) || bail "Temurin 25 fixture juc did not start"
    $T docker --debug flame -d 4 --mode lock --format folded,pprof -o t.folded "$fx25" 2>t.err; rc=$?
    diag "$(grep -E 'sidecar timings|recorder: off-CPU' t.err)"
    is "$rc" 0 "Temurin 25: --mode lock: exit 0"
    like "$(cat t.lock.folded 2>/dev/null)" "$juc_re" "Temurin 25: the ReentrantLock's waits under its acquire"
    tj=$(sum t.lock.folded "$juc_re"); ta=$(sum t.lock.folded '.')
    check "Temurin 25: the ReentrantLock's share 25-75 % ($(ratio "$tj" "$ta"))" within "$tj" "$ta" 0.25 0.75
    check "Temurin 25: the ReentrantLock's waits 1.0-3.0 x the window ($(ratio "$tj" 4000000000))" within "$tj" 4000000000 1.0 3.0
    if have_go; then
        tc=$(go tool pprof -sample_index=contentions -focus='JucFixture\.jucContend' -top t.lock.pb.gz 2>/dev/null |
            sed -n 's/^Showing nodes accounting for \([0-9][0-9]*\),.*/\1/p' | head -1)
        diag "Temurin 25: contentions: ReentrantLock ${tc:-none} in 4 s"
        check "Temurin 25: the ReentrantLock's delay per contention 12-80 ms ($(ratio "$tj" "${tc:-0}") ns)" \
            within "$tj" "${tc:-0}" 12000000 80000000
    fi
    docker rm -f "$fx25" >/dev/null
fi

no_sidecar_left
done_testing
