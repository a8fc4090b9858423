#!/usr/bin/env bash
# docker flame diff when the JIT decided differently: two running fixture JVMs with the same code,
# one with countPrimes inlined into work's compiled loop (osr-inline), one calling it (osr-call).
# Their stacks differ only in the fold annotation (countPrimes_[i] against countPrimes), as after
# a recompilation. Matched as read, the diff must show no mover above the noise of two profiles
# (measured here: three profiles of one JVM in a row, diffed pairwise) and one isPrime frame in
# the graph; --exact keeps the stacks apart. Against osr-call-slow (countPrimes does 2.5x the
# divisions), isPrime's share must grow by what the workload predicts from the measured before
# share (about 13 points), not by the +-80 of two inline hosts.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T=${FLAME_E2E_TIMEOUT:-180}
command -v python3 >/dev/null || bail "python3 reads the summaries"

a=$(fixture osr-inline) || bail "fixture osr-inline did not start (work not compiled)"
b=$(fixture osr-call) || bail "fixture osr-call did not start"
s=$(fixture osr-call-slow) || bail "fixture osr-call-slow did not start"

# movers.py JSON: "largest |delta|", then "name delta noise" of FlameFixture.isPrime
movers() {
    python3 - "$1" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
m = j["movers"]["grew"] + j["movers"]["shrank"]
big = max([abs(x["delta_pts"]) for x in m] + [0])
names = [x["name"] for x in m]
ip = [x for x in m if x["name"] == "FlameFixture.isPrime"]
# isPrime absent: its share moved by less than the movers' floor (0.005 points; the diffs ask
# for every mover, --top 100000), so its change is 0 and its noise unknown (0: the bound below
# is then the measured noise of two profiles)
ip = ip[0] if ip else {"delta_pts": 0, "noise_pts": 0, "before_pct": 0, "after_pct": 0}
cp = [x for x in m if x["name"] == "FlameFixture.countPrimes"]
cp = cp[0] if cp else {"before_pct": 0, "after_pct": 0}
print("%.2f %.2f %.2f %.2f %.2f %d %d %.2f %.2f" % (big, ip["delta_pts"], ip.get("noise_pts") or 0,
      ip["before_pct"], ip["after_pct"], names.count("FlameFixture.isPrime"),
      j.get("stacks_matched", 0), cp["before_pct"], cp["after_pct"]))
EOF
}
# largest |x| of the given numbers
max_abs() { python3 -c 'import sys; print("%.2f" % max(abs(float(x)) for x in sys.argv[1:]))' "$@"; }
le() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$1" "$2"; }

# --- 1. the noise of two profiles of one JVM: three profiles of a in a row, diffed pairwise ---
for i in 1 2 3; do
    timeout -k 30 "$T" docker flame "$a" -d 6 -q --format folded -o "n$i.folded" 2>"n$i.err" ||
        bail "profile $i of osr-inline failed: $(tail -2 "n$i.err")"
done
pairs=()
for p in "1 2" "2 3" "1 3"; do
    set -- $p
    docker flame diff "n$1.folded" "n$2.folded" --single -o "n$1$2.svg" --summary-json "n$1$2.json" \
        >/dev/null 2>&1 || bail "diff of profiles $1 and $2 failed"
    read -r big _ <<<"$(movers "n$1$2.json")"
    pairs+=("$big")
done
noise=$(max_abs "${pairs[@]}")
diag "noise of two profiles of one JVM: the largest mover of each pair: ${pairs[*]} points; noise = $noise"

# --- 2. unchanged code, compiled two ways: a against b ---
out=$(timeout -k 30 "$T" docker flame diff "$a" "$b" -d 10 --top 100000 -o ab.svg --summary-json ab.json 2>ab.err)
is "$?" 0 "diff of osr-inline and osr-call exits 0"
diag "$out"
read -r big d nz bp ap count matched _ <<<"$(movers ab.json)"
check "the stacks differed only in annotations and were matched as read ($matched joined)" test "$matched" -ge 1
like "$(cat ab.err)" 'matched as one' "a note says so"
# one mover, or none when its share did not move (below the movers' floor); the old plugin
# listed it once per inline host
check "isPrime is at most one mover, not one per inline host ($count)" test "$count" -le 1
# the bound: twice the noise measured in step 1 (the largest of three pairs' movers is itself a
# small sample: a CI run saw 9.36 against 1.5 x 6.20), and at least four standard errors of
# isPrime's change at this run's sample counts (the machine may be busy: fewer samples, more
# noise). The old plugin's largest mover here was 82.86 points.
bound=$(python3 -c "print('%.2f' % max(2 * $noise, 2 * $nz, 3))")
check "no mover above the noise of two profiles: largest $big <= $bound points (isPrime $bp% -> $ap%, $d +- $nz)" le "$big" "$bound"
# the graph: isPrime's tower (its widest frame) changed within the bound, in the graph and its
# mirror (matched exactly: one tower all new, +80%, and the other all gone, -80% in the mirror)
tower() {
    python3 - "$1" <<'EOF'
import re, sys
best = (-1, 0)
for m in re.finditer(r'<title>FlameFixture\.isPrime \([0-9,]+ samples, ([0-9.]+)%; ([-+]?[0-9.]+)%\)', open(sys.argv[1]).read()):
    best = max(best, (float(m.group(1)), float(m.group(2))))
print("%.2f %.2f" % best)
EOF
}
read -r share change <<<"$(tower ab.svg)"
check "the graph: isPrime's tower ($share% wide) changed by $change%, within $bound" le "$(max_abs "$change")" "$bound"
read -r share change <<<"$(tower ab.mirror.svg)"
check "the mirror: isPrime's tower ($share% wide) changed by $change%, within $bound" le "$(max_abs "$change")" "$bound"

# --- 3. --exact: the stacks as folded, apart (what diff did before matching as read) ---
timeout -k 30 "$T" docker flame diff --exact "$a" "$b" -d 5 -o ex.folded >/dev/null 2>ex.err
is "$?" 0 "diff --exact exits 0"
like "$(cat ex.folded)" 'FlameFixture\.countPrimes_\[i\];FlameFixture\.isPrime_\[i\] [1-9][0-9]* 0$' \
    "--exact: osr-inline's stack (countPrimes inlined) is its own"
like "$(cat ex.folded)" 'FlameFixture\.countPrimes;FlameFixture\.isPrime_\[i\] 0 [1-9][0-9]*$' \
    "--exact: osr-call's stack (countPrimes called) is its own"

# --- 4. a real change: a against osr-call-slow (countPrimes(16000) instead of 8000) ---
out=$(timeout -k 30 "$T" docker flame diff "$a" "$s" -d 10 --top 100000 -o as.svg --summary-json as.json 2>as.err)
is "$?" 0 "diff of osr-inline and osr-call-slow exits 0"
diag "$out"
read -r _ d nz bp ap count _ cb ca <<<"$(movers as.json)"
# isPrime's divisions for countPrimes(16000) over countPrimes(8000): the predicted share after,
# from the share before (the rest of the loop, mixHashes, does the same work)
want=$(python3 - "$bp" "$cb" <<'EOF'
import sys
def cost(n):
    t = 0
    for i in range(2, n):
        d = 2
        while d * d <= i:
            t += 1
            if i % d == 0:
                break
            d += 1
        t += 1
    return t
k = cost(16000) / cost(8000)
p0 = (float(sys.argv[1]) + float(sys.argv[2])) / 100  # prime counting: isPrime + countPrimes
p1 = k * p0 / (k * p0 + 1 - p0)
print("%.2f" % (100 * (p1 - p0)))
EOF
)
tol=$(python3 -c "print('%.2f' % max(5, 2 * $nz))")
sum=$(python3 -c "print('%.2f' % (($ap + $ca) - ($bp + $cb)))")
check "prime counting (isPrime + countPrimes) grew by about the predicted $want points: $sum, within $tol" \
    python3 -c "import sys; sys.exit(0 if abs($sum - $want) <= $tol else 1)"
# countPrimes, called and no longer inlined, keeps its loop's own share: that much of the
# change shows on its line
check "isPrime's own line says so: $d points (+- $nz; $bp% -> $ap%; countPrimes $cb% -> $ca%)" \
    python3 -c "import sys; sys.exit(0 if abs($d - $want) <= $tol + $ca else 1)"
is "$count" 1 "isPrime is one mover"
check "targets still running" test "$(docker inspect -f '{{.State.Running}}' "$a" "$b" "$s" | sort -u)" = true
done_testing
