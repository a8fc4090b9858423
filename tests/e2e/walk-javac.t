#!/usr/bin/env bash
# Whole Java stacks on a real deep workload without -XX:+PreserveFramePointer: javac in a loop
# (variant compiler-nofp, tests/fixtures/java/CompilerLoop.java; stacks 60-300 frames, up to
# ~48 KiB). Its compiling thread's samples reach the thread's root (java.lang.Thread.run under
# the VM's thread start and the call stub), per CPU and per thread, and the summary's walk counts
# say so for the whole JVM. Before: 85-90 % of walks at the root (a 16 KiB stack copy, the rest
# read from the running thread's memory after the sample; stubs with pads; code heaps that grew).
# The recorded samples of tests/unit/sidecar_walk_replay.c (jdk*-javac) judge the walker frame
# by frame; this judges the recorder live, on a loaded machine too: the bounds leave room for a
# few odd samples of a short profile.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
MIN=${WALK_JAVAC_MIN_SHARE:-97}

# rooted FOLDED -> "R T": of T samples of thread compiler-0, R are whole stacks
rooted() {
    awk '$0 ~ /^compiler-0;/ { n = $NF; t += n; s = $0; sub(/ [0-9]+$/, "", s); gsub(/_\[[a-z]+\]/, "", s)
        if (s ~ /^compiler-0;[^;]*;start_thread;.*;call_stub;java\.lang\.Thread\.run;/) r += n }
        END { printf "%d %d\n", r, t }' "$1"
}

fx=$(fixture compiler-nofp) || bail "fixture compiler-nofp did not start"
timeout -k 5 120 docker --debug flame -d 10 --format folded -o cpu.folded --summary-json cpu.json "$fx" 2>cpu.err
okif $? "per CPU: exit 0"
read -r r t < <(rooted cpu.folded)
diag "per CPU: $r of $t samples of compiler-0 whole;" "$(grep -a 'recorder: walk' cpu.err | sed 's/.*recorder: //')"
check "per CPU: enough samples of the compiling thread ($t)" test "$t" -ge 100
check "per CPU: >= $MIN % of them are whole stacks ($r of $t)" test $((100 * r)) -ge $((MIN * t))
# every walk of the JVM (GC and JIT threads too): at the root, or cut at a frame named why
read -r wr ww < <(python3 -c 'import json; w=json.load(open("cpu.json"))["containers"][0]["walk"]; print(w["root"], w["walks"])')
diag "per CPU: $wr of $ww walks of the JVM at the root: $(python3 -c 'import json; s=json.load(open("cpu.json"))["containers"][0]["walk"]["status"]; print(" ".join("%s=%d" % kv for kv in s.items() if kv[1]))')"
check "per CPU: enough walks ($ww)" test "${ww:-0}" -ge 100
check "per CPU: >= $MIN % of the JVM's walks at the root ($wr of $ww)" test $((100 * ${wr:-0})) -ge $((MIN * ${ww:-1}))

# per thread: perf's dwarf-mode samples, the same stack copy, walked by the same rewrite
timeout -k 5 120 docker flame -d 10 --sampling thread --format folded -o thread.folded "$fx" 2>thread.err
okif $? "per thread: exit 0"
read -r r t < <(rooted thread.folded)
diag "per thread: $r of $t samples of compiler-0 whole"
check "per thread: enough samples of the compiling thread ($t)" test "$t" -ge 100
check "per thread: >= $MIN % of them are whole stacks ($r of $t)" test $((100 * r)) -ge $((MIN * t))
docker rm -f "$fx" >/dev/null
done_testing
