#!/usr/bin/env bash
# Several of cpu, wall and offcpu in one run (docs/MODES.md "Several modes in one run"): the
# sidecar records once, as for wall (cpu-clock samples and off-CPU samples, each tagged with its
# thread's state), and splits the samples by their tag: cpu gets the on-CPU ones, counted one a
# sample, offcpu the others, weighing their time off CPU in ns. The `sleeper` fixture (as in
# tests/e2e/mode-offcpu.t): a thread "sleeper" in FlameFixture.sleepy sleeps 6-10 ms and spins
# 1-3 ms, again and again; "worker-0" spins in FlameFixture.countPrimes/isPrime all the time.
# Known by construction:
#   - --mode cpu,offcpu -o dir/: one file per mode and format, both in --summary-json with their
#     mode; the cpu file is in samples (no more than Hz x window x CPUs), names the busy
#     worker's method, has no thread-state tag; the offcpu file has the sleep's whole stack in
#     ns, no tag; the sleeper's cpu samples (x 1e9/Hz) plus its off-CPU ns are its window (as
#     wall's total is); titles and pprof types per mode;
#   - --mode cpu,wall,offcpu: the three split one recording exactly: the cpu file's stacks are
#     wall's [running] stacks, each weighing 1e9/Hz ns a sample (+-10 %: a period varied per
#     sample averages out), and the offcpu file's stacks and total are wall's [runnable] and
#     [sleeping] ones (to the 3 ns a sample the tag takes off).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"
real_plugin_setup
T="timeout -k 10 150"
D=5
HZ=99
fx=$(fixture sleeper) || bail "fixture sleeper did not start"

sum() { grep -E -- "$2" "$1" | awk '{ s += $NF } END { printf "%.0f\n", s + 0 }'; }
js() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
# a folded file's stacks without a trailing state tag, their values summed per stack, sorted
untag() { sed -E 's/;\[(running|runnable|sleeping)\]( [0-9]+)$/\2/' "$1" |
    awk '{ v = $NF; $NF = ""; s[$0] += v } END { for (k in s) printf "%s%.0f\n", k, s[k] }' | sort; }
stacks() { untag "$1" | sed -E 's/ [0-9]+$//'; }

# --- cpu,offcpu: one recording, two profiles ---
mkdir -p co
$T docker --debug flame -d $D --mode cpu,offcpu --format svg,folded,pprof -o co/ \
    --summary-json co.json "$fx" 2>co.err; rc=$?
is "$rc" 0 "--mode cpu,offcpu: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 co.err)"
cpuf=$(ls co/*.cpu.folded 2>/dev/null | head -1)
offf=$(ls co/*.offcpu.folded 2>/dev/null | head -1)
[ -s "$cpuf" ] && [ -s "$offf" ] || { fdiag "$(ls co; tail -5 co.err)"; bail "no cpu or offcpu folded file"; }
check "an SVG and a pprof per mode too" test "$(ls co/*.cpu.svg co/*.offcpu.svg co/*.cpu.pb.gz co/*.offcpu.pb.gz | wc -l)" = 4
is "$(js co.json 'sorted(f["mode"] + "." + f["format"] for f in d["containers"][0]["files"])')" \
    "['cpu.folded', 'cpu.pprof', 'cpu.svg', 'offcpu.folded', 'offcpu.pprof', 'offcpu.svg']" \
    "--summary-json lists each mode's files with its mode"
like "$(cat co.err)" ': [0-9,]+ samples \(sampled per CPU' "the summary counts the cpu profile in samples"
like "$(cat co.err)" 'off-CPU: [0-9,]+ ns in [0-9]+ stacks' "the summary says off-CPU time in ns"

# cpu: the worker's method, in samples
like "$(cat "$cpuf")" '^worker-0;.*FlameFixture\.(countPrimes|isPrime)' "cpu: the busy worker's method"
cpus=$(nproc)
tot=$(sum "$cpuf" .)
check "cpu: in samples, not ns ($tot <= $HZ Hz x ${D} s x $cpus CPUs + 10 %)" \
    within "$tot" $((HZ * D * cpus)) 0.001 1.1
is "$(grep -cE ';\[(running|runnable|sleeping)\] [0-9]+$' "$cpuf")" 0 "cpu: no thread-state tag"
sleep_re='^sleeper;.*start_thread;.*FlameFixture\.sleepy[^;]*;java\.lang\.Thread\.sleep;.*(futex|pthread_cond)'
# offcpu: the sleep's whole stack with most of the window, as --mode offcpu alone has it
like "$(cat "$offf")" "$sleep_re" "offcpu: the sleep's whole stack (thread, start_thread, FlameFixture.sleepy, Thread.sleep, the futex wait)"
slept=$(sum "$offf" "$sleep_re")
# the recording's length as the sidecar measured it (its recorder's start to its end, pending
# off-CPU samples counted to the end): on a loaded machine it can be well past -d, and a thread
# asleep at the stop counts until then
rec_ms=$(js co.json 'd["containers"][0]["sidecar_timings_ms"]["record"]' 2>/dev/null)
W=$(awk -v r="${rec_ms:-0}" -v d=$D 'BEGIN { w = r > d * 1000 ? r : d * 1000; printf "%.0f", w * 1e6 }')
# in ns: each sampled sleep weighs >= its 6 ms (a count of samples would be a few), and all of
# them no more than the recording
check "offcpu: the sleep weighs its time in ns (>= one 6-ms sleep, <= the recording: $slept ns)" \
    within "$slept" "$W" "$(awk -v w="$W" 'BEGIN { printf "%.9f", 6e6 / w }')" 1.0
# samples the recorder lost (it fell behind: a very loaded machine) are intervals missing from the
# totals, which the plugin says; then only the upper bound holds
lost=$(sed -n 's/.*(\([0-9,]*\) samples lost.*/\1/p' co.err | head -1 | tr -d ,)
# The two files together: the sleeper's on-CPU samples (each 1e9/Hz ns) and its off-CPU time
# are its whole window, as wall's total is (tests/e2e/mode-offcpu.t), whatever the load (which
# stretches its rounds: less sleep, more waiting to run, both counted). Tolerance: +-20 % for
# the edges, widened by 4 sd of the off-CPU estimate (p from the recorder's counters, ~8-ms
# sleeps) and of the on-CPU sample count.
son=$(sum "$cpuf" '^sleeper;')
soff=$(sum "$offf" '^sleeper;')
read -r so sa <<<"$(sed -n 's/.*recorder: off-CPU: switch-outs=\([0-9]*\) sampled=\([0-9]*\).*/\1 \2/p' co.err)"
read -r sl lo hi <<<"$(awk -v so="${so:-0}" -v sa="${sa:-0}" -v ws="$slept" -v n="$son" -v off="$soff" -v hz=$HZ -v w=${D}000000000 -v W="$W" -v lost="${lost:-0}" 'BEGIN {
    p = so > 0 ? sa / so : 1; if (p > 1) p = 1
    k = p * ws / 8e6; sd = k > 0 ? sqrt((1 - p) / k) : 1
    t = 0.2 + 4 * sd * ws / w + 4 * sqrt(n + 1) * 1e9 / hz / w
    lo = lost > 0 ? 0 : 1 - t
    printf "%.0f %.3f %.3f", n * 1e9 / hz + off, lo, (1 + t) * W / w }')"
check "the sleeper's cpu samples x 1e9/Hz + its off-CPU ns are its window ($(ratio "$sl" ${D}000000000), $lo-$hi; recorded ${rec_ms} ms, ${lost:-0} lost; $son samples, $sa of $so switch-outs sampled)" \
    within "$sl" ${D}000000000 "$lo" "$hi"
is "$(grep -cE ';\[(running|runnable|sleeping)\] [0-9]+$' "$offf")" 0 "offcpu: no thread-state tag"
# titles, marks and pprof types: each mode's own
like "$(grep -o 'profile-type: [a-z]*' co/*.offcpu.svg | head -1)" 'offcpu' "offcpu SVG: the type's mark"
like "$(grep -o 'off-CPU ([a-z]*)' co/*.offcpu.svg | head -1)" 'off-CPU \(ns\)' "offcpu SVG: the title says ns"
unlike "$(cat co/*.cpu.svg)" 'profile-type: (offcpu|wall)' "cpu SVG: no other type's mark"
if have_go; then
    go_env
    st=$(go tool pprof -raw co/*.offcpu.pb.gz 2>&1 | sed -n '/^Samples:/,/^ *[0-9]/p' | head -3)
    like "$st" 'off_cpu/nanoseconds' "pprof offcpu: sample type off_cpu/nanoseconds"
    st=$(go tool pprof -raw co/*.cpu.pb.gz 2>&1 | sed -n '/^Samples:/,/^ *[0-9]/p' | head -3)
    like "$st" 'samples/count cpu/nanoseconds' "pprof cpu: sample types samples/count cpu/nanoseconds"
else
    nok "go tool pprof is missing (install.sh --test-deps installs golang-go)"
fi
caps=$(sed -n 's/.*sidecar caps [^:]*: //p' co.err)
like "$caps" '"record":"0000000000000000"' "S caps record: none ($caps)"

# --- cpu,wall,offcpu: the split is exact ---
mkdir -p cwo
$T docker --debug flame -d 4 --mode cpu,wall,offcpu --format folded -o cwo/ "$fx" 2>cwo.err; rc=$?
is "$rc" 0 "--mode cpu,wall,offcpu: exit 0"
c=$(ls cwo/*.cpu.folded 2>/dev/null | head -1)
w=$(ls cwo/*.wall.folded 2>/dev/null | head -1)
o=$(ls cwo/*.offcpu.folded 2>/dev/null | head -1)
[ -s "$c" ] && [ -s "$w" ] && [ -s "$o" ] || { fdiag "$(ls cwo; tail -5 cwo.err)"; bail "a file of cpu, wall or offcpu is missing"; }
grep -E ';\[running\] [0-9]+$' "$w" >run.folded
grep -E ';\[(runnable|sleeping)\] [0-9]+$' "$w" >off.folded
is "$(diff <(stacks run.folded) <(stacks "$c") | wc -l)" 0 "cpu's stacks are wall's [running] stacks"
runns=$(sum run.folded .)
csamp=$(sum "$c" .)
check "each cpu sample weighs 1e9/Hz ns in wall ($(ratio "$runns" "$csamp") ns a sample)" \
    within "$runns" "$(awk -v n="$csamp" -v hz=$HZ 'BEGIN { printf "%.0f", n * 1e9 / hz }')" 0.9 1.1
is "$(diff <(stacks off.folded) <(stacks "$o") | wc -l)" 0 "offcpu's stacks are wall's [runnable] and [sleeping] ones"
offns=$(sum off.folded .)
ons=$(sum "$o" .)
check "offcpu's total is wall's off-CPU part ($ons vs $offns ns)" within "$ons" "$offns" 0.999 1.001

no_sidecar_left
done_testing
