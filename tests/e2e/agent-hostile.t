#!/usr/bin/env bash
# The agent in a JVM whose code is named by a hostile application (tests/agent/Hostile.java):
# a class name with a newline, a control byte and 3000 more characters, a method name with BEL
# and TAB. Its compiled code must appear as one well-formed map line per range, names cut to
# their bound with the method name kept, control bytes replaced, and the JVM must run on.
. "$(dirname "$0")/agent-lib.sh"
compile_java "$ROOT/tests/agent/Hostile.java"
java -cp "$T/classes" Hostile >"$T/jvm.out" 2>"$T/jvm.err" &
JPID=$!
PIDS+=("$JPID")
check "hostile JVM ready" poll_grep "$T/jvm.out" "Hostile ready" 30
out=$(python3 "$ATTACH" "$JPID" load "$SO" true "start,sig=1,dir=$T" 2>&1)
okif $(grep -qx 'return code: 0' <<<"$out" && echo 0 || echo 1) "agent started"
m="$T/perf-$JPID.map"
check "the hostile method is compiled and named" poll_grep "$m" '...hot??spot(int)' 30
python3 "$ROOT/tests/agent/check_map.py" "$m" >"$T/check"
okif $? "map valid: whole lines, no control bytes, names within bounds ($(head -1 "$T/check"))"
line=$(grep -a -m1 'hot??spot' "$m")
name=${line#* * }
check "control bytes in the class name became '?'" test "${name:0:10}" = "Evil?Name?"
okif $([ "${#name}" -le 4095 ] && echo 0 || echo 1) "name bounded (${#name} bytes)"
out=$(python3 "$ATTACH" "$JPID" load "$SO" true stop 2>&1)
okif $(grep -qx 'return code: 0' <<<"$out" && echo 0 || echo 1) "agent stopped"
check "JVM still running" kill -0 "$JPID"
check "JVM stderr empty" test ! -s "$T/jvm.err"
done_testing
