#!/usr/bin/env bash
# Per-CPU sampling through `docker flame` (issue 18, "Done when"): the profile is recorded with
# per-CPU events and the in-kernel filter (from the summary); it names the hot method; a JVM
# started in the container mid-recording is in it with Java names; while a busy process runs on
# the host and a busy second container runs, nothing of either appears (names, frames, samples);
# with CAP_PERFMON withheld from the recorder the fallback warns once and the profile is right;
# `top` records per CPU too. No leftovers in the target.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
command -v gcc >/dev/null || bail "gcc is needed to build the intruder"
real_plugin_setup

JAVA=/opt/java/openjdk/bin/java
# Wait (bounded, $3 s) until file $1 matches the extended regex $2.
poll_grep() {
    local deadline=$((SECONDS + $3))
    until grep -qE -- "$2" "$1" 2>/dev/null; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}
fx=$(fixture pid1) || bail "fixture pid1 did not start"
before=$(target_tmp "$fx")

# --- 1. per CPU, hot method named ---
timeout -k 5 120 docker flame -d 4 --format folded --format svg -o p1 "$fx" 2>err1
okif $? "profile: exit 0"
like "$(cat err1)" 'samples \(sampled per CPU, filter bpf\)' "summary: sampled per CPU, in-kernel filter"
like "$(cat p1.folded 2>/dev/null)" 'FlameFixture\.isPrime' "the hot method is named"
unlike "$(cat err1)" 'warning' "no warning"

# --- 2. a JVM started mid-recording ---
timeout -k 5 120 docker flame -d 8 --format folded -o p2.folded "$fx" 2>err2 &
bg=$!
poll_grep err2 'recording' 30 || nok "no progress line before starting the second JVM"
docker exec -d "$fx" "$JAVA" -XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app FlameFixture --slow countPrimes
wait_pid "$bg" 120
is "$RC" 0 "profile with a JVM started mid-recording: exit 0"
newpid=$(sed -n 's/^  JVM pid \([0-9]*\) .*/\1/p' err2 | grep -vx 1 | head -1)
check "the new JVM is listed (pid ${newpid:-none})" test -n "$newpid"
like "$(grep "^java-$newpid " p2.folded 2>/dev/null)" "^java-$newpid FlameFixture;.*FlameFixture\.(countPrimes|isPrime|mixHashes|work)" \
    "its stacks are in the profile with Java names"
like "$(grep '^java-1 ' p2.folded 2>/dev/null)" 'FlameFixture\.isPrime' "the first JVM's too"

# --- 3. a busy host process and a busy second container stay out ---
cat >intruder.c <<'EOF'
/* busy and recognisable: its name and its function must never appear in the target's profile */
#include <sys/prctl.h>
#include <time.h>
volatile unsigned long intruder_sink;
__attribute__((noinline)) static void intruder_spin(void)
{
    for (unsigned long i = 0; i < 1000000; i++)
        intruder_sink += i * i;
}
int main(void)
{
    prctl(PR_SET_NAME, "intruderXq");
    time_t end = time(NULL) + 60;
    while (time(NULL) < end)
        intruder_spin();
    return 0;
}
EOF
gcc -O1 -fno-omit-frame-pointer -static -o intruder intruder.c || bail "cannot build the intruder"
./intruder &
hostbusy=$!
other=$(docker run -d --network none --label docker-flame-test=1 --label "docker-flame-test.owner=$FLAME_TEST_OWNER" \
    -v "$TMP/intruder:/intruder:ro" flame-fixture-jvm:latest /intruder) || bail "second container did not start"
other2=$(fixture slow) || bail "second fixture did not start"
timeout -k 5 120 docker flame -d 5 --format folded -o p3.folded "$fx" 2>err3
okif $? "profile next to a busy host process and busy containers: exit 0"
kill "$hostbusy" 2>/dev/null; wait "$hostbusy" 2>/dev/null
like "$(cat err3)" 'sampled per CPU, filter bpf' "still per CPU"
unlike "$(cat p3.folded err3 2>/dev/null)" 'intruder|swapper' "nothing of the intruders (names, frames)"
# the target runs two JVMs now (1 and the one started above): every stack is rooted in one of
# them; a sample of anything else would have no such root
jvms=$(sed -n 's/^  JVM pid \([0-9]*\) .*/java-\1 FlameFixture/p' err3 | sort -u | tr '\n' '|')
roots=$(cut -d';' -f1 p3.folded | sort -u | tr '\n' '|')
is "$roots" "$jvms" "every stack is rooted in one of the target's JVMs"; diag "$(cat err3)"
samples=$(sed -n 's/.*: \([0-9,]*\) samples (sampled.*/\1/p' err3 | tr -d ,)
# the target has ~2-3 busy threads; 2 CPUs at 99 Hz for 5 s: at most ~990 samples in all
check "sample count bounded by the target's own CPU time (${samples:-?} <= 1100)" test "${samples:-99999}" -le 1100
docker rm -f "$other" "$other2" >/dev/null 2>&1

# --- 4. CAP_PERFMON withheld: per thread, one warning, a correct profile ---
DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON=1 timeout -k 5 120 docker flame -d 4 --format folded -o p4.folded "$fx" 2>err4
okif $? "fallback: exit 0"
is "$(grep -c 'per-CPU sampling refused' err4)" 1 "fallback: exactly one warning"
like "$(cat err4)" 'sampling per thread instead, which costs the JVM' "the warning says what it costs"
like "$(cat err4)" 'samples \(sampled per thread\)' "summary: sampled per thread"
like "$(cat p4.folded 2>/dev/null)" 'FlameFixture\.isPrime' "fallback profile names the hot method"
DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON=1 timeout -k 5 120 docker flame --sampling cpu -d 2 -o p5.svg "$fx" 2>err5
is "$?" 6 "--sampling cpu without the capability: exit 6 (perf not permitted)"
check "... and no output file" test ! -e p5.svg

# --- 5. top records per CPU ---
timeout -k 5 60 docker flame top -i 1s "$fx" >top.out 2>top.err &
tp=$!
poll_grep top.out 'isPrime' 40
okif $? "top shows the hot method"
ctrl_c "$tp"
wait_pid "$tp" 30
is "$RC" 0 "top: exit 0 after Ctrl-C"

# --- no leftovers ---
is "$(sidecars_left)" 0 "no sidecar left"
is "$(target_tmp "$fx")" "$before" "target /tmp as before"
is "$(flame_mounts "$(target_pid "$fx")")" 0 "no docker-flame mount left in the target"
check "the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
done_testing
