#!/usr/bin/env bash
# Hostile target: the attach socket and the JVM itself are impostors.
#  - a fake JVM (a static binary mapping a file named libjvm.so, so it passes the maps test) that
#    serves its own /tmp/.java_pid<N> and answers garbage / nothing / an endless stream;
#  - a squatter (another process of the JVM's uid) holding /tmp/.java_pid<N> of a real JVM and
#    taking the name back whenever the JVM's listener renames its socket over it;
#  - a process named java that is not a JVM (argv claims -XX:+PreserveFramePointer), alone and
#    next to a real JVM: it must not be attached to nor get a SIGQUIT (it prints every signal).
# Required: bounded time (attach timeout) and memory, a clear W/E line, the sidecar finishes
# with D, the target restored and alive.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
. "$(dirname "$0")/hostile-lib.sh"

# --- fake JVM serving its own attach socket ---
for mode in garbage silent stream; do
    fx=$(hstart "fakejvm ready" /hostile fakejvm $mode) || { nok "fakejvm $mode started"; continue; }
    before=$(tsnap "$fx")
    o=$TMP/fake-$mode.out
    hsidecar "$fx" "$o" --duration 2 --attach-timeout 3; rc=$?
    diag "fakejvm $mode: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB, attach $(sfield "$o" attach) ms; $(grep -a '^W' "$o" | grep -v PreserveFrame | cut -c1-200)"
    common "$o" "fakejvm $mode" 0 "$rc"
    case $mode in
    garbage) like "$(grep -a '^W' "$o")" 'agent load failed: pid 1: malformed attach answer' "fakejvm garbage: W says the answer was malformed" ;;
    silent)  like "$(grep -a '^W' "$o")" 'answered nothing within 3000 ms' "fakejvm silent: W says the listener answered nothing"
             check "fakejvm silent: attach bounded by --attach-timeout 3 ($(sfield "$o" attach) ms)" test "$(sfield "$o" attach)" -lt 4500 ;;
    stream)  like "$(grep -a '^W' "$o")" 'malformed attach answer' "fakejvm stream: an endless junk answer is malformed, not a loaded agent"
             like "$(grep -a '^J' "$o")" '"attach":"none"' "fakejvm stream: not counted as attached" ;;
    esac
    unlike "$(grep -a '^[JW]' "$o")" $'[\x01-\x08\x0b-\x1f\x7f]' "fakejvm $mode: no control bytes from the answer in J/W lines"
    check "fakejvm $mode: still a profile" grep -aq '^F ' "$o"
    untouched "$fx" "$before" "fakejvm $mode"
    docker rm -f "$fx" >/dev/null
done

# --- squatter on a real JVM's socket name ---
for mode in garbage stream; do
    fx=$(hstart "squat ready" /init "$J" "${JOPTS[@]}" --- /hostile squat $mode auto) || { nok "squat $mode started"; continue; }
    # the JVM's own ready line as well
    timeout 30 sh -c "until docker logs $fx 2>&1 | grep -q 'FlameFixture ready'; do sleep 0.1; done"
    before=$(tsnap "$fx")
    o=$TMP/squat-$mode.out
    hsidecar "$fx" "$o" --duration 2 --attach-timeout 3; rc=$?
    diag "squat $mode: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB; $(grep -a '^W' "$o" | cut -c1-200)"
    common "$o" "squat $mode" 0 "$rc"
    like "$(grep -a '^W' "$o")" 'is served by another process \(SO_PEERCRED\): refused' "squat $mode: W says the socket is not the JVM's"
    unlike "$(grep -a '^W' "$o")" 'Compiler.perfmap' "squat $mode: no second attempt through Compiler.perfmap"
    check "squat $mode: still a profile" grep -aq '^F ' "$o"
    # no SIGQUIT reached the JVM: HotSpot starts its "Attach Listener" thread on the first one
    # (with a squatter on the name, a later one prints a thread dump)
    jpid=$(docker top "$fx" -eo pid,comm | awk '$2 == "java" { print $1; exit }')
    check "squat $mode: no SIGQUIT sent (the JVM has no Attach Listener thread)" \
        sh -c "[ -n '$jpid' ] && ! cat /proc/$jpid/task/*/comm | grep -q 'Attach Listener'"
    untouched "$fx" "$before" "squat $mode"
    docker rm -f "$fx" >/dev/null
done

# --- a process named java that is not a JVM ---
fx=$(hstart "fakejava ready" /fake/bin/java -XX:+PreserveFramePointer -cp /app Main) || bail "fakejava"
before=$(tsnap "$fx")
o=$TMP/fakejava.out
hsidecar "$fx" "$o" --duration 1; rc=$?
common "$o" "fakejava alone" 4 "$rc"
like "$(grep -a '^E' "$o")" '^E no_jvm .*1 java' "fakejava alone: E no_jvm lists '1 java'"
untouched "$fx" "$before" "fakejava alone"
docker rm -f "$fx" >/dev/null

fx=$(hstart "fakejava ready" /init "$J" "${JOPTS[@]}" --- /fake/bin/java -XX:+PreserveFramePointer -cp /app Main) || bail "fakejava + JVM"
timeout 30 sh -c "until docker logs $fx 2>&1 | grep -q 'FlameFixture ready'; do sleep 0.1; done"
before=$(tsnap "$fx")
o=$TMP/fakejava2.out
hsidecar "$fx" "$o" --duration 2; rc=$?
common "$o" "fakejava + JVM" 0 "$rc"
is "$(grep -ac '^J' "$o")" 1 "fakejava + JVM: exactly one JVM"
unlike "$(grep -a '^J' "$o")" 'fake/bin/java' "fakejava + JVM: the impostor is not treated as a JVM"
like "$(grep -a '^F' "$o")" 'FlameFixture\.' "fakejava + JVM: the real JVM profiled with names"
untouched "$fx" "$before" "fakejava + JVM"
docker rm -f "$fx" >/dev/null

# --- a comm built to break the one-line E message (ESC, BEL, newline, a fake "E x" line) ---
fx=$(hstart "evilcomm ready" /init /fake/bin/java --- /hostile evilcomm) || bail "evilcomm"
o=$TMP/evilcomm.out
hsidecar "$fx" "$o" --duration 1; rc=$?
common "$o" "evil comm" 4 "$rc"
is "$(grep -ac '^E' "$o")" 1 "evil comm: exactly one E line (the newline did not start a second)"
like "$(grep -a '^E' "$o")" '^E no_jvm .*java' "evil comm: E no_jvm lists what it saw"
unlike "$(cat "$o")" $'[\x01-\x08\x0b-\x1f\x7f]' "evil comm: no control bytes in the stream"
docker rm -f "$fx" >/dev/null
done_testing
