#!/usr/bin/env bash
# The agent under load: a JVM run with -Xcomp (every method compiled: thousands of
# CompiledMethodLoad events on the compiler threads) and two workers, started and stopped
# several times in a row while a reader reads the map as it grows (like the live `top` view).
# Every start/stop must succeed, every snapshot must hold whole lines only, every final map must
# be valid, and the JVM must stay alive with nothing unexpected on its stderr.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
SO="$ROOT/build/libflameagent.so"
ATTACH="$ROOT/tests/agent/attach.py"
CHECK="$ROOT/tests/agent/check_map.py"
CYCLES=${AGENT_STRESS_CYCLES:-5}
n=0
failed=0
ok() {
    local c=$1
    shift
    n=$((n + 1))
    if [ "$c" -eq 0 ]; then echo "ok $n - $*"; else echo "not ok $n - $*"; failed=$((failed + 1)); fi
}
check() {
    local d=$1
    shift
    if "$@"; then ok 0 "$d"; else ok 1 "$d"; fi
}
[ -f "$SO" ] || make -C "$ROOT" -s build/libflameagent.so >&2 || { echo "Bail out! no $SO"; exit 1; }
T=$(mktemp -d /tmp/agent-stress.XXXXXX)
JPID=
WPID=
cleanup() {
    [ -n "$WPID" ] && kill "$WPID" 2>/dev/null
    [ -n "$JPID" ] && kill "$JPID" 2>/dev/null && wait "$JPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
poll_grep() {
    local deadline=$((SECONDS + $3))
    until grep -qF -- "$2" "$1" 2>/dev/null; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}
load() {
    local out
    out=$(python3 "$ATTACH" "$1" load "$SO" true "$2" 2>&1) && grep -qx 'return code: 0' <<<"$out"
}

mkdir -p "$T/classes"
javac -nowarn -d "$T/classes" "$ROOT/tests/fixtures/java/FlameFixture.java" 2>/dev/null || { echo "Bail out! javac"; exit 1; }
cd "$T" || exit 1
java -Xcomp -XX:+PreserveFramePointer -cp "$T/classes" FlameFixture --threads 2 --late >"$T/jvm.out" 2>"$T/jvm.err" &
JPID=$!
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
ok $((starts == CYCLES ? 0 : 1)) "$starts/$CYCLES starts returned 0"
ok $((stops == CYCLES ? 0 : 1)) "$stops/$CYCLES stops returned 0"
bad=$(cat "$T"/c*.watch | grep -c 'torn or malformed')
ok $((bad == 0 ? 0 : 1)) "readers saw whole lines only while the agent wrote ($bad bad)"
valid=0
for i in $(seq "$CYCLES"); do
    python3 "$CHECK" "$T/c$i/perf-$JPID.map" >"$T/c$i.check" && valid=$((valid + 1))
done
ok $((valid == CYCLES ? 0 : 1)) "$valid/$CYCLES maps valid (whole lines, no overlaps)"
sed 's/^/# /' "$T/c$CYCLES.check"
grep 'info: started' "$T/jvm.err" | tail -1 | sed 's/^/# /'
check "JVM still running" kill -0 "$JPID"
unexpected=$(grep -v '^docker-flame agent: info: ' "$T/jvm.err")
ok $([ -z "$unexpected" ] && echo 0 || echo 1) "nothing but info lines on the JVM's stderr"
[ -n "$unexpected" ] && printf '# %s\n' "$unexpected"
echo "1..$n"
[ "$failed" -eq 0 ]
