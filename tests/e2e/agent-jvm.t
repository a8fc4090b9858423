#!/usr/bin/env bash
# The perf-map agent in real JVMs on the host (no Docker): loaded the way the sidecar loads it
# (attach `load <path> true <options>`, tests/agent/attach.py), on every JDK found (the host's
# `java` and /usr/lib/jvm/*; override with AGENT_TEST_JAVA="java1 java2"). Checks the map's
# format and content (compiled, inlined, stubs, a method compiled mid-recording), three
# start/stop cycles with replay, sig=1, inline=0, failures that must leave the JVM running, and
# -agentpath loading. Prints the measured figures as TAP diagnostics.
. "$(dirname "$0")/agent-lib.sh"
CHECK="$ROOT/tests/agent/check_map.py"
compile_java "$ROOT/tests/fixtures/java/FlameFixture.java"

fd_open() { ls -l "/proc/$1/fd" 2>/dev/null | grep -qF -- "$2"; }
has() { grep -qF -- "$2" "$1"; }
hasnt() { ! grep -qF -- "$2" "$1"; }
valid_map() {
    local out
    out=$(python3 "$CHECK" "$1")
    local rc=$?
    diag "$(basename "$(dirname "$1")")/$(basename "$1"): $out"
    return $rc
}

java_list() {
    if [ -n "${AGENT_TEST_JAVA:-}" ]; then
        printf '%s\n' $AGENT_TEST_JAVA
        return
    fi
    { command -v java; ls /usr/lib/jvm/*/bin/java 2>/dev/null; } | while read -r j; do
        printf '%s %s\n' "$(readlink -f "$j")" "$j"
    done | sort -u -k1,1 | cut -d' ' -f2
}

# Start the fixture with java $1; logs in $2.out/$2.err. Sets JPID.
start_fixture() {
    local java=$1 log=$2
    shift 2
    # SIGHUP at its default: a JVM started with it ignored (a test run under nohup) never calls
    # the fixture's handler, and lateBloomer never starts
    env --default-signal=HUP "$java" -XX:+PreserveFramePointer "$@" -cp "$T/classes" FlameFixture >"$log.out" 2>"$log.err" &
    JPID=$!
    PIDS+=("$JPID")
    poll_grep "$log.out" "FlameFixture ready pid=$JPID " 30
}

suite() {
    local java=$1 tag
    tag=$(basename "$(dirname "$(dirname "$(readlink -f "$java")")")")
    local L="$T/$tag" pid m expected_fail=0
    mkdir -p "$L"
    diag "=== $tag ($java)"
    if ! start_fixture "$java" "$L/jvm"; then
        okif 1 "$tag: fixture JVM starts"
        return
    fi
    pid=$JPID

    # --- the very first load fails: HotSpot (16+) dlclose()s the library; it must stay ----
    load "$pid" "start,dir=/nonexistent/first"
    okif $(($? == 2 ? 0 : 1)) "$tag: a failing first load returns 2"
    expected_fail=$((expected_fail + 1))
    check "$tag: ... and the library stays mapped (-z nodelete)" grep -qF "$SO" "/proc/$pid/maps"

    # --- cycle 1: start, content, a method compiled mid-recording, stop -------------------
    mkdir -p "$L/c1"
    m="$L/c1/perf-$pid.map"
    local t0=$SECONDS
    load "$pid" "start,dir=$L/c1,verbose=1"
    okif $? "$tag: load start returns 0 ($(echo $LOAD_OUT))"
    check "$tag: map created and open in the JVM" fd_open "$pid" "$m"
    check "$tag: Interpreter (DynamicCodeGenerated replay) in the map when load returns" has "$m" " Interpreter"
    check "$tag: FlameFixture.countPrimes appears" poll_grep "$m" " FlameFixture.countPrimes" 30
    check "$tag: inlined chain countPrimes->isPrime appears" poll_grep "$m" " FlameFixture.countPrimes->FlameFixture.isPrime" 30
    check "$tag: chains are outermost first (no isPrime->countPrimes)" hasnt "$m" "isPrime->FlameFixture.countPrimes"
    check "$tag: java.util.HashMap.merge appears" poll_grep "$m" "java.util.HashMap.merge" 30
    check "$tag: lateBloomer absent before SIGHUP" hasnt "$m" "lateBloomer"
    kill -HUP "$pid"
    check "$tag: fixture saw SIGHUP" poll_grep "$L/jvm.out" "FlameFixture late on" 10
    check "$tag: lateBloomer (compiled mid-recording) appears" poll_grep "$m" "FlameFixture.lateBloomer" 30
    # Measurement only (not synchronisation): the map's size about 5 s after the start.
    while [ $((SECONDS - t0)) -lt 5 ]; do sleep 0.2; done
    diag "$tag: map after ~5 s: $(wc -l <"$m") lines, $(wc -c <"$m") bytes, $(grep -c -- '->' "$m") inlined ranges"
    check "$tag: map lines parse, no control bytes, no overlaps" valid_map "$m"
    load "$pid" "stop"
    okif $? "$tag: load stop returns 0"
    check "$tag: map closed after stop" eval "! fd_open $pid '$m'"
    local size1
    size1=$(wc -c <"$m")

    # --- cycles 2 and 3: replay right after start; sig=1; inline=0 -------------------------
    mkdir -p "$L/c2" "$L/c3"
    load "$pid" "start,sig=1,dir=$L/c2"
    okif $? "$tag: second start returns 0"
    m="$L/c2/perf-$pid.map"
    check "$tag: replay: countPrimes in the map as soon as load returns" has "$m" " FlameFixture.countPrimes"
    check "$tag: sig=1 gives parameter lists" has "$m" "FlameFixture.mixHashes(java.util.Random, int)"
    check "$tag: sig=1 inlined chain" has "$m" "FlameFixture.countPrimes(int)->FlameFixture.isPrime(int)"
    check "$tag: sig=1 map valid" valid_map "$m"
    load "$pid" "stop"
    okif $? "$tag: second stop returns 0"
    check "$tag: second map closed" eval "! fd_open $pid '$m'"
    load "$pid" "start,inline=0,dir=$L/c3"
    okif $? "$tag: third start (inline=0) returns 0"
    m="$L/c3/perf-$pid.map"
    check "$tag: inline=0: countPrimes present" has "$m" " FlameFixture.countPrimes"
    check "$tag: inline=0: no inlined chains" hasnt "$m" "->"
    check "$tag: inline=0 map valid" valid_map "$m"
    load "$pid" "stop,verbose=1"
    okif $? "$tag: third stop returns 0"
    check "$tag: third map closed" eval "! fd_open $pid '$m'"
    check "$tag: first map untouched since its stop" test "$(wc -c <"$L/c1/perf-$pid.map")" = "$size1"

    # --- failures: error code, one stderr line, JVM keeps running, next start works -------
    load "$pid" "start,dir=/nonexistent/dir"
    okif $(($? == 2 ? 0 : 1)) "$tag: nonexistent dir: return code 2 ($(echo $LOAD_OUT))"
    expected_fail=$((expected_fail + 1))
    load "$pid" "start,dir=/proc/self"
    okif $(($? == 2 ? 0 : 1)) "$tag: non-writable dir: return code 2"
    expected_fail=$((expected_fail + 1))
    mkdir -p "$L/evil" "$L/fifo"
    echo precious >"$L/victim"
    ln -s "$L/victim" "$L/evil/perf-$pid.map"
    load "$pid" "start,dir=$L/evil"
    okif $(($? == 2 ? 0 : 1)) "$tag: symlink at the map path refused (O_NOFOLLOW)"
    expected_fail=$((expected_fail + 1))
    check "$tag: symlink target untouched" test "$(cat "$L/victim")" = precious
    mkfifo "$L/fifo/perf-$pid.map"
    load "$pid" "start,dir=$L/fifo"
    okif $(($? == 2 ? 0 : 1)) "$tag: FIFO at the map path refused without blocking"
    expected_fail=$((expected_fail + 1))
    # A full file system during the replay (a tiny tmpfs; needs root and CAP_SYS_ADMIN).
    mkdir -p "$L/full"
    if mount -t tmpfs -o size=4k tmpfs "$L/full" 2>/dev/null; then
        MOUNTS+=("$L/full")
        load "$pid" "start,dir=$L/full"
        okif $(($? == 2 ? 0 : 1)) "$tag: full file system during the replay: return code 2"
        expected_fail=$((expected_fail + 2)) # the write error, then the failed start
        check "$tag: incomplete map removed" test ! -e "$L/full/perf-$pid.map"
        umount "$L/full" && MOUNTS=("${MOUNTS[@]/$L\/full/}")
    else
        skip_or_fail "cannot mount a tmpfs here"
        skip_or_fail "cannot mount a tmpfs here"
    fi
    load "$pid" "start,frobnicate=1"
    okif $(($? == 1 ? 0 : 1)) "$tag: unknown option: return code 1"
    expected_fail=$((expected_fail + 1))
    check "$tag: JVM alive after the failures" kill -0 "$pid"
    mkdir -p "$L/c4"
    load "$pid" "start,dir=$L/c4"
    okif $? "$tag: start after failures returns 0"
    check "$tag: re-armed: countPrimes replayed" has "$L/c4/perf-$pid.map" " FlameFixture.countPrimes"
    load "$pid" "stop"
    okif $? "$tag: stop after failures returns 0"

    # --- the same file by another path (a new mount of the agent dir), and a copy ---------
    mkdir -p "$L/other" "$L/copy" "$L/c5" "$L/c6"
    ln "$SO" "$L/other/libflameagent.so" 2>/dev/null || ln -s "$SO" "$L/other/libflameagent.so"
    cp "$SO" "$L/copy/libflameagent.so"
    load "$pid" "start,dir=$L/c5" "$L/other/libflameagent.so"
    okif $? "$tag: start through another path to the same file returns 0"
    check "$tag: ... and replays" has "$L/c5/perf-$pid.map" " FlameFixture.countPrimes"
    load "$pid" "stop" "$L/other/libflameagent.so"
    okif $? "$tag: ... stop returns 0"
    check "$tag: ... map closed" eval "! fd_open $pid '$L/c5/perf-$pid.map'"
    load "$pid" "start,dir=$L/c6" "$L/copy/libflameagent.so"
    okif $? "$tag: start through a copy of the library returns 0"
    check "$tag: ... and replays" has "$L/c6/perf-$pid.map" " FlameFixture.countPrimes->FlameFixture.isPrime"
    load "$pid" "stop" "$L/copy/libflameagent.so"
    okif $? "$tag: ... stop returns 0"
    check "$tag: ... map closed" eval "! fd_open $pid '$L/c6/perf-$pid.map'"

    # --- start while started (a profile that never sent stop): re-open, replay -------------
    mkdir -p "$L/c7" "$L/c8"
    load "$pid" "start,dir=$L/c7"
    okif $? "$tag: start returns 0"
    load "$pid" "start,dir=$L/c8"
    okif $? "$tag: start again without stop returns 0"
    check "$tag: ... the first map is closed" eval "! fd_open $pid '$L/c7/perf-$pid.map'"
    check "$tag: ... the new map has the replay" has "$L/c8/perf-$pid.map" " FlameFixture.countPrimes"
    load "$pid" "stop"
    okif $? "$tag: ... stop returns 0"
    load "$pid" "stop"
    okif $? "$tag: a second stop (already quiet) returns 0"

    # --- default dir (/tmp) --------------------------------------------------------------
    load "$pid" "start"
    okif $? "$tag: start with default options returns 0"
    check "$tag: default map is /tmp/perf-<pid>.map" has "/tmp/perf-$pid.map" " Interpreter"
    load "$pid" "stop"
    okif $? "$tag: stop returns 0"
    check "$tag: /tmp map closed" eval "! fd_open $pid /tmp/perf-$pid.map"
    rm -f "/tmp/perf-$pid.map"

    # --- the JVM: alive, its stderr holds only what we provoked ---------------------------
    check "$tag: JVM still running" kill -0 "$pid"
    local errors unexpected
    errors=$(grep -c '^docker-flame agent: [^i]' "$L/jvm.err")
    okif $((errors == expected_fail ? 0 : 1)) "$tag: one stderr line per provoked failure ($errors/$expected_fail)"
    unexpected=$(grep -vE '^docker-flame agent: |^WARNING: (A JVM TI agent has been loaded dynamically|If a serviceability tool is in use|Dynamic loading of agents)' "$L/jvm.err")
    okif $([ -z "$unexpected" ] && echo 0 || echo 1) "$tag: no other output on the JVM's stderr"
    [ -n "$unexpected" ] && diag "unexpected stderr:" "$unexpected"
    grep -h '^docker-flame agent: info' "$L/jvm.err" | while read -r l; do diag "$tag: $l"; done
    local per
    per=$(sed -n 's/.*, \([0-9.]*\) us per method$/\1/p' "$L/jvm.err" | sort -n | tail -1)
    okif $(awk -v p="${per:-x}" 'BEGIN { exit !(p ~ /^[0-9.]+$/ && p + 0 < 5000) }' && echo 0 || echo 1) "$tag: time per compiled-method event is sane (${per:-?} us)"
    kill "$pid"

    # --- -agentpath at startup (Agent_OnLoad) ---------------------------------------------
    mkdir -p "$L/onload"
    # --- -agentpath at startup with a file system that fills up while recording -----------
    mkdir -p "$L/fills"
    if mount -t tmpfs -o size=32k tmpfs "$L/fills" 2>/dev/null; then
        MOUNTS+=("$L/fills")
        if start_fixture "$java" "$L/fills.jvm" "-agentpath:$SO=start,dir=$L/fills"; then
            check "$tag: file system full while recording: agent reports and goes quiet" \
                poll_grep "$L/fills.jvm.err" "agent disabled until the next start" 30
            check "$tag: ... the JVM keeps running" kill -0 "$JPID"
            check "$tag: ... and keeps working" poll_grep "$L/fills.jvm.out" "FlameFixture ready" 1
            check "$tag: ... map holds whole lines only" valid_map "$L/fills/perf-$JPID.map"
            kill "$JPID"
            wait "$JPID" 2>/dev/null
        else
            okif 1 "$tag: JVM starts with -agentpath on a small tmpfs"
        fi
        umount "$L/fills"
    else
        for i in 1 2 3 4; do skip_or_fail "cannot mount a tmpfs here ($i)"; done
    fi

    if start_fixture "$java" "$L/onload/jvm" "-agentpath:$SO=start,dir=$L/onload"; then
        m="$L/onload/perf-$JPID.map"
        check "$tag: -agentpath: Interpreter announced at startup" poll_grep "$m" " Interpreter" 10
        check "$tag: -agentpath: inlined countPrimes->isPrime" poll_grep "$m" " FlameFixture.countPrimes->FlameFixture.isPrime" 30
        check "$tag: -agentpath map valid" valid_map "$m"
        check "$tag: -agentpath: JVM stderr empty" test ! -s "$L/onload/jvm.err"
        # The map deleted while started (the profiler died without `stop`): the next event
        # (lateBloomer's compilation after SIGHUP) notices and the agent goes quiet.
        rm -f "$m"
        kill -HUP "$JPID"
        check "$tag: map deleted while started: agent goes quiet" \
            poll_grep "$L/onload/jvm.err" "was deleted; agent quiet until the next start" 30
        check "$tag: ... the deleted map is closed" eval "! fd_open $JPID '$m'"
        check "$tag: ... and not re-created" test ! -e "$m"
        check "$tag: ... the JVM keeps running" kill -0 "$JPID"
        kill "$JPID"
    else
        okif 1 "$tag: JVM starts with -agentpath"
    fi
}

while read -r j; do
    [ -x "$j" ] && suite "$j"
done < <(java_list)
done_testing
