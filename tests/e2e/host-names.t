#!/usr/bin/env bash
# `docker flame host` names native frames exactly as the one-shot profile of the same JVM does,
# or leaves them unnamed -- never a wrong name (docs/HOST.md "Native frames"). Two containers
# whose files differ at the same paths: the native fixture on JDK 17 and on Temurin 25 (both
# images carry libc at /lib/x86_64-linux-gnu/libc.so.6 -- equal bytes, different inodes -- and a
# JDK at /opt/java/openjdk with different libjvm.so, libjava.so, libzip.so). The native part of
# each Java thread's stacks (below its first Java frame: start_thread, thread_native_entry,
# Thread::call_run, ...) and the native thread's libz frames must be what that JVM's own one-shot
# profile shows. Before: start_thread read `__strncpy_sse2_unaligned` (a debug file left by one
# container applied to another's libc) and the second JVM's libjvm frames were named from the
# first's (`TemplateInterpreterGenerator::generate_math_entry` under `thread_native_entry`).
. "$(dirname "$0")/lib.sh"
real_plugin_setup
jdk25_fixture_image --need "two JDKs at one path are what this test needs" || done_testing

a=$(fixture native hn17) || bail "fixture native (JDK 17) did not start"
b=$(FLAME_FIXTURE_IMAGE=$IMAGE25 fixture native hn25) || bail "fixture native (JDK 25) did not start"

# native_prefixes FILE SKIP: per stack of the threads worker-0 and native, the frames below the
# first Java frame (one with a '.', or an annotation _[j] _[i] _[int]), SKIP leading fields off
# (one-shot: the thread; host split file: process and thread), the thread kept in front
native_prefixes() {
    awk -v skip="$2" '{
        sub(/ [0-9]+$/, ""); n = split($0, f, ";")
        t = f[skip]; if (t != "worker-0" && t != "native") next
        p = t
        for (i = skip + 1; i <= n; i++) { if (f[i] ~ /\./ || f[i] ~ /_\[(j|i|int|k)\]$/) break; p = p ";" f[i] }
        print p
    }' "$1" | sort -u
}

for c in hn17 hn25; do
    timeout -k 5 120 docker flame -d 6 --format folded -o "one-$c.folded" "$c" 2>"err-$c"
    okif $? "$c: one-shot profile"
done
timeout -k 5 180 docker flame host -q -d 8 --container hn17 --container hn25 --format folded -o split/ \
    >table 2>errh
okif $? "host with both containers: exit 0"
unlike "$(cat errh)" 'assertion|stack smashing|perf script' "perf script did not fail"
for c in hn17 hn25; do
    f=$(ls split/flame-"$c"-*.folded 2>/dev/null | head -1)
    check "$c: its split file" test -s "$f"
    native_prefixes "one-$c.folded" 1 >"one-$c.prefixes"
    native_prefixes "$f" 2 >"host-$c.prefixes"
    diag "$c one-shot: $(head -3 "one-$c.prefixes" | tr '\n' '|')"
    diag "$c host:     $(head -3 "host-$c.prefixes" | tr '\n' '|')"
    like "$(cat "host-$c.prefixes")" '^worker-0;([_a-z]*clone[0-9]*;)?start_thread;thread_native_entry;Thread::call_run;JavaThread::thread_main_inner' \
        "$c: Java threads start in libc's start_thread and libjvm's entry, as in the one-shot"
    # a prefix may end early (unnamed frame, or a sample cut short), never differ: every host
    # prefix with its unnamed [lib...] frames taken out is the start of a one-shot prefix
    wrong=$(while read -r p; do
        q=$(printf '%s' "$p" | sed -E 's/;\[lib[^];]*\].*$//')
        awk -v q="$q" 'index($0, q) == 1 { f = 1 } END { exit !f }' "one-$c.prefixes" ||
            printf '%s\n' "$p"
    done <"host-$c.prefixes")
    is "$wrong" "" "$c: no native frame named otherwise than in its own one-shot profile"
    like "$(cat "$f")" '(^|;)adler32(_z)? [0-9]+' "$c: libz's adler32 named in the host view too"
done
unlike "$(cat split/flame-hn*.folded)" '__strncpy_sse2_unaligned|generate_math_entry' \
    "none of the wrong names seen before"
done_testing
