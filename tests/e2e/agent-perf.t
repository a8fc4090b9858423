#!/usr/bin/env bash
# The agent's map as perf uses it (host perf, no Docker): record the fixture JVM with
# `perf record -e cpu-clock -g` while the agent is started, then `perf script`. Checks that
# (nearly) every sample whose leaf is JIT code carries a Java name, that the inlined isPrime
# shows up as the leaf `FlameFixture.countPrimes->FlameFixture.isPrime`, that return addresses
# in callers resolve too (HashMap.merge called from mixHashes), and that lateBloomer, compiled
# after the agent started, is named.
. "$(dirname "$0")/agent-lib.sh"
if ! command -v perf >/dev/null || ! perf record -q -e cpu-clock -o /dev/null -- true 2>/dev/null; then
    if [ "${CI:-}" = true ]; then echo "Bail out! perf cannot record here"; exit 1; fi
    echo "1..0 # SKIP perf cannot record here"
    exit 0
fi
compile_java "$ROOT/tests/fixtures/java/FlameFixture.java"
# SIGHUP at its default (under nohup it is ignored, and the JVM then never calls the handler)
env --default-signal=HUP java -XX:+PreserveFramePointer -cp "$T/classes" FlameFixture >"$T/jvm.out" 2>"$T/jvm.err" &
JPID=$!
PIDS+=("$JPID")
check "fixture JVM ready" poll_grep "$T/jvm.out" "FlameFixture ready pid=$JPID " 30
# The map goes to /tmp: the only place host perf looks for perf-<pid>.map.
check "agent started" load "$JPID" "start"
kill -HUP "$JPID"
check "lateBloomer switched on" poll_grep "$T/jvm.out" "FlameFixture late on" 10
# The recording window is a duration, not a synchronisation point.
perf record -q -e cpu-clock -F 499 -g -p "$JPID" -o "$T/perf.data" -- sleep 4 2>"$T/record.err"
check "agent stopped" load "$JPID" "stop"
perf script -i "$T/perf.data" >"$T/script.txt" 2>/dev/null
check "perf script produced samples" test -s "$T/script.txt"

# Per sample: the leaf frame, and the second frame.
awk -v map="perf-$JPID.map" 'BEGIN { RS = "" }
{
    split($0, L, "\n"); n++
    leaf = L[2]
    if (index(leaf, map)) { jit++; if (leaf ~ /\[unknown\]/) unnamed++ }
    sub(/^[ \t]*[0-9a-f]+ /, "", leaf); sub(/\+0x[0-9a-f]+ .*| \(.*/, "", leaf)
    two = L[3]; sub(/^[ \t]*[0-9a-f]+ /, "", two); sub(/\+0x[0-9a-f]+ .*| \(.*/, "", two)
    print "leaf " leaf > "/dev/stderr"
    print "pair " leaf " <- " two > "/dev/stderr"
}
END { printf "%d %d %d\n", n, jit, unnamed }' "$T/script.txt" >"$T/counts" 2>"$T/frames"
read -r samples jit unnamed <"$T/counts"
echo "# samples=$samples jit_leaf=$jit unnamed_jit_leaf=${unnamed:-0}"
okif $([ "$jit" -gt 100 ] && echo 0 || echo 1) "more than 100 samples with a JIT leaf ($jit)"
okif $([ $(( (jit - ${unnamed:-0}) * 100 )) -ge $((jit * 99)) ] && echo 0 || echo 1) \
    ">= 99% of JIT-leaf samples carry a Java name ($((jit - ${unnamed:-0}))/$jit)"
check "inlined leaf FlameFixture.countPrimes->FlameFixture.isPrime sampled" \
    grep -qx 'leaf FlameFixture.countPrimes->FlameFixture.isPrime' "$T/frames"
check "lateBloomer (compiled after the start) sampled by name" grep -q '^leaf FlameFixture.lateBloomer' "$T/frames"
# A caller frame is a return address: it must resolve to the chain of the call site, whose
# innermost method is the one that calls the leaf. Checked where the caller is known (leaf
# compiled on its own, caller JIT code). A few samples taken in a callee's prologue, before it
# pushed its frame pointer, skip their caller: hence 90%, not 100%. Were the split off by one
# call site, the innermost caller would be whatever follows the call, nearly always wrong.
awk '$1 == "pair" && $3 == "<-" && $4 != "Interpreter" && index($4, ".") {
    want = ""
    if ($2 ~ /^FlameFixture\.(lateBloomer|countPrimes|mixHashes)$/) want = "^FlameFixture\\.work$"
    if ($2 == "java.util.HashMap.resize") want = "^java\\.util\\.HashMap\\.(merge|putVal)$"
    if ($2 == "java.util.HashMap.merge") want = "^FlameFixture\\.mixHashes$"
    if (want == "") next
    n = split($4, f, "->"); checked++
    if (f[n] ~ want) good++; else print "# caller mismatch: " $2 " <- " $4
}
END { printf "%d %d\n", checked, good > "/dev/stderr" }' "$T/frames" 2>"$T/callers"
read -r checked good <"$T/callers"
okif $([ "${checked:-0}" -ge 5 ] && [ $((good * 100)) -ge $((checked * 90)) ] && echo 0 || echo 1) \
    "caller return addresses resolve to the calling method (${good:-0}/${checked:-0})"
sort "$T/frames" | grep '^leaf' | uniq -c | sort -rn | head -6 | sed 's/^/# /'
check "JVM still running" kill -0 "$JPID"
done_testing
