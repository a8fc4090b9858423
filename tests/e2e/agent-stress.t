#!/usr/bin/env bash
# The agent under load: a JVM run with -Xcomp (every method compiled: thousands of
# CompiledMethodLoad events on the compiler threads) and two workers, started and stopped
# several times in a row while a reader reads the map as it grows (like the live `top` view).
# Every start/stop must succeed, every snapshot must hold whole lines only, every final map must
# be valid, and the JVM must stay alive with nothing unexpected on its stderr.
. "$(dirname "$0")/agent-lib.sh"
CHECK="$ROOT/tests/agent/check_map.py"
CYCLES=${AGENT_STRESS_CYCLES:-5}
WPID=
test_cleanup() { [ -n "$WPID" ] && kill "$WPID" 2>/dev/null; }
compile_java "$ROOT/tests/fixtures/java/FlameFixture.java"
java -Xcomp -XX:+PreserveFramePointer -cp "$T/classes" FlameFixture --threads 2 --late >"$T/jvm.out" 2>"$T/jvm.err" &
JPID=$!
PIDS+=("$JPID")
check "-Xcomp fixture JVM ready" poll_grep "$T/jvm.out" "FlameFixture ready pid=$JPID " 60

starts=0 stops=0
for i in $(seq "$CYCLES"); do
    mkdir -p "$T/c$i"
    python3 "$CHECK" --watch "$T/c$i" "$T/c$i.stop" 60 >"$T/c$i.watch" &
    WPID=$!
    load "$JPID" "start,dir=$T/c$i,verbose=1" && starts=$((starts + 1))
    load "$JPID" "stop" && stops=$((stops + 1))
    touch "$T/c$i.stop"
    wait "$WPID"
    echo "# cycle $i reader (exit $?): $(tail -1 "$T/c$i.watch")"
    WPID=
done
okif $((starts == CYCLES ? 0 : 1)) "$starts/$CYCLES starts returned 0"
okif $((stops == CYCLES ? 0 : 1)) "$stops/$CYCLES stops returned 0"
bad=$(cat "$T"/c*.watch | grep -c 'torn or malformed')
okif $((bad == 0 ? 0 : 1)) "readers saw whole lines only while the agent wrote ($bad bad)"
valid=0
for i in $(seq "$CYCLES"); do
    python3 "$CHECK" "$T/c$i/perf-$JPID.map" >"$T/c$i.check" && valid=$((valid + 1))
done
okif $((valid == CYCLES ? 0 : 1)) "$valid/$CYCLES maps valid (whole lines, no overlaps)"
sed 's/^/# /' "$T/c$CYCLES.check"
grep 'info: started' "$T/jvm.err" | tail -1 | sed 's/^/# /'
check "JVM still running" kill -0 "$JPID"
unexpected=$(grep -v '^docker-flame agent: info: ' "$T/jvm.err")
okif $([ -z "$unexpected" ] && echo 0 || echo 1) "nothing but info lines on the JVM's stderr"
[ -n "$unexpected" ] && printf '# %s\n' "$unexpected"
done_testing
