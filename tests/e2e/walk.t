#!/usr/bin/env bash
# Whole Java stacks without -XX:+PreserveFramePointer (issue 26): the recorder walks each sample's
# stack itself (sidecar/recorder/walk.h). Per JDK (17, and Temurin 25 when the host has it):
#   - a JVM started WITHOUT the flag: the worker thread's samples reach its entry frame
#     (java.lang.Thread.run under the VM's thread start; before: ~0 %, the frame-pointer chain
#     stopped after a few frames);
#   - a JVM started WITH the flag: the recorder checks every walk against the kernel's
#     frame-pointer chain of the same sample (sc_walker_fp_check; its counts are on the
#     recorder's --debug line): >= 99.5 % agree frame by frame.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
JDK25=${FIXTURE_JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
# The issue's goal is 99 %, met on long recordings (docs/BENCHMARKS.md "Stack walking") and by
# the recorded samples of tests/unit/sidecar_walk_replay.c; on a loaded machine a short profile
# may hold only a few dozen samples, where one odd sample is 2-4 %: 95 % here.
MIN=${WALK_MIN_SHARE:-95}

# rooted FOLDED -> "R T": of T worker-thread samples, R are whole stacks: java.lang.Thread.run
# below the VM's thread start and the call stub, and the workload's methods under their callers
# (FlameFixture.work directly above countPrimes and mixHashes: the frame-pointer chain of a JVM
# without the flag skips compiled frames, when it gets that far at all)
rooted() {
    awk '$0 ~ /^worker-/ { n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s); gsub(/_\[[a-z]+\]/, "", s)
        if (s !~ /^worker-[0-9]+;[^;]*;start_thread;.*;call_stub;java\.lang\.Thread\.run;/) next
        if (s ~ /FlameFixture\.countPrimes/ && s !~ /FlameFixture\.work;FlameFixture\.countPrimes/) next
        if (s ~ /FlameFixture\.mixHashes/ && s !~ /FlameFixture\.work;FlameFixture\.mixHashes/) next
        r += n }
        END { printf "%d %d\n", r, t }' "$1"
}
# walkline ERR KEY -> the value of KEY= on the recorder's walk line
walkval() { grep -a 'recorder: walk:' "$1" | tail -1 | tr ' ' '\n' | sed -n "s/^$2=//p"; }

check_jdk() {
    local label=$1 image=$2 fx r t fc fs
    fx=$(FLAME_FIXTURE_IMAGE=$image fixture nofp) || { nok "$label: fixture nofp did not start"; return; }
    timeout -k 5 120 docker --debug flame -d 8 --format folded -o "$label-nofp.folded" "$fx" 2>"$label-nofp.err"
    okif $? "$label without the flag: exit 0"
    read -r r t < <(rooted "$label-nofp.folded")
    diag "$label without the flag: $r of $t worker samples reach Thread.run;" "$(grep -a 'recorder: walk' "$label-nofp.err" | sed 's/.*recorder: //')"
    check "$label without the flag: enough worker samples ($t)" test "$t" -ge 20
    check "$label without the flag: >= $MIN % of the worker samples are whole stacks ($r of $t)" \
        test $((100 * r)) -ge $((MIN * t))
    like "$(cat "$label-nofp.folded")" 'FlameFixture\.work(_\[[a-z]+\])?;FlameFixture\.countPrimes' \
        "$label without the flag: the hot method under its callers"
    docker rm -f "$fx" >/dev/null

    fx=$(FLAME_FIXTURE_IMAGE=$image fixture pid1) || { nok "$label: fixture pid1 did not start"; return; }
    timeout -k 5 120 docker --debug flame -d 8 --format folded -o "$label-fp.folded" "$fx" 2>"$label-fp.err"
    okif $? "$label with the flag: exit 0"
    fc=$(walkval "$label-fp.err" fp_compared) fs=$(walkval "$label-fp.err" fp_same)
    diag "$label with the flag: ${fs:-?} of ${fc:-?} walks agree with the frame-pointer chain"
    check "$label with the flag: walks compared with the frame-pointer chain (${fc:-none})" test "${fc:-0}" -ge 20
    check "$label with the flag: >= 99.5 % agree frame by frame (${fs:-?} of ${fc:-?})" \
        test $((1000 * ${fs:-0})) -ge $((995 * ${fc:-1}))
    read -r r t < <(rooted "$label-fp.folded")
    check "$label with the flag: >= $MIN % of the worker samples are whole stacks ($r of $t)" \
        test $((100 * r)) -ge $((MIN * t))
    docker rm -f "$fx" >/dev/null
}

check_jdk jdk17 flame-fixture-jvm:latest
if [ -x "$JDK25/bin/jlink" ]; then
    FIXTURE_JDK=$JDK25 FLAME_FIXTURE_IMAGE=flame-fixture-jvm25:latest "$ROOT/tests/fixtures/build.sh" >/dev/null ||
        bail "cannot build the JDK 25 fixture image"
    check_jdk jdk25 flame-fixture-jvm25:latest
else
    diag "no JDK 25 at $JDK25: its check is not run (FIXTURE_JDK25=DIR to point at one)"
fi
done_testing
