#!/usr/bin/env bash
# Native frames named: the target's own shared libraries -- each copied as the MAPPED
# inode through /proc/<pid>/map_files, never by its path, never the sidecar's or the host's copy
# -- and the target's own build-id-matched debug files (the fixture image carries libc's, as
# Debian's libc6-dbg installs it). Fixture variant native: a thread "native" in libz's adler32
# (exported: named from .dynsym) and libc's write; every thread starts in libc's start_thread
# (a local symbol: named only from the debug file). Before: every sample had a `[libc.so.6]`
# frame. Hostile: a library and the debug file replaced in the container after the JVM mapped
# the library -- the names still come from the mapped inode, the foreign debug file is refused;
# a fake JVM mapping a huge file, an escaped name, /dev/zero and an unlinked file.
. "$(dirname "$0")/lib.sh"
real_plugin_setup

# share (0-100) of the samples of folded file $1 with an unnamed native frame (`[lib...]`)
unnamed_share() {
    awk '{ n = $NF; t += n; if ($0 ~ /(^|;)\[lib[^];]*\](;| )/) u += n } END { printf "%d\n", t ? 100 * u / t : 100 }' "$1"
}

fx=$(fixture native) || bail "fixture native did not start"
timeout -k 5 120 docker flame -d 6 --format folded -o n1.folded "$fx" 2>err1
okif $? "native fixture: exit 0"
f=n1.folded
samples=$(awk '{ t += $NF } END { print t + 0 }' "$f")
check "samples recorded ($samples)" test "$samples" -ge 50
share=$(unnamed_share "$f")
diag "samples with an unnamed native frame: $share % (before: 100 %)"
check "at most 5 % of the samples keep an unnamed [lib...] frame ($share %)" test "$share" -le 5
# (the stack walker goes one frame further, to the thread's root in libc's clone3)
like "$(cat "$f")" '^native;([_a-z]*clone[0-9]*;)?start_thread;thread_native_entry;' \
    "libc's start_thread (local: from the target's debug file) roots the native thread"
like "$(cat "$f")" 'FileOutputStream\.write;writeSingle;(handleWrite;)?[_A-Za-z]*write [0-9]+' \
    "libc's write named under libjava's writeSingle"
like "$(cat "$f")" '(^|;)adler32(_z)? [0-9]+' "libz's adler32 named"
unlike "$(cat err1)" 'warning' "no warning"

# --- per thread (perf record): the same copies serve it ---
timeout -k 5 120 docker flame -d 4 --sampling thread --format folded -o t1.folded "$fx" 2>err2
okif $? "per thread: exit 0"
share=$(unnamed_share t1.folded)
check "per thread: at most 5 % keep an unnamed [lib...] frame ($share %)" test "$share" -le 5
like "$(cat t1.folded)" '(^|;)start_thread;' "per thread: start_thread named"

# --- top: its windows use the same copies (made once, before the first window) ---
timeout -k 10 300 docker flame top "$fx" --interval 1s --record top.folded >snap.txt 2>errt &
tpid=$!
top_named() { local n; n=$(grep -c '^--- docker flame top' snap.txt 2>/dev/null); [ "${n:-0}" -ge 3 ]; }
if wait_until 120 top_named; then ok "top: three snapshots"; else nok "top: three snapshots"; fdiag "$(cat errt)"; fi
ctrl_c "$tpid"
wait "$tpid"
is "$?" 0 "top: exit 0 on Ctrl-C"
like "$(cat top.folded 2>/dev/null)" '(^|;)start_thread;' "top --record: start_thread named"
like "$(cat top.folded 2>/dev/null)" '(^|;)adler32(_z)? [0-9]+' "top --record: adler32 named"
share=$(unnamed_share top.folded)
check "top --record: at most 5 % keep an unnamed [lib...] frame ($share %)" test "$share" -le 5

# --- hostile: libz and libc's debug file replaced in the container after they were mapped ---
# libc's build-id read off the image itself, not off build/fixtures: a fixture image that is up to
# date is not rebuilt, and then a fresh clone has no staging tree (CI on a machine that kept it).
docker cp "$fx:/lib/x86_64-linux-gnu/libc.so.6" fixture-libc.so.6 >/dev/null 2>&1
libc_id=$(readelf -n fixture-libc.so.6 2>/dev/null | sed -n 's/.*Build ID: *//p')
[ "${#libc_id}" -ge 8 ] || bail "cannot read the build-id of the fixture's libc (readelf: binutils)"
dbg=/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug
docker cp "$fx:$dbg" fixture-libc.debug >/dev/null 2>&1
check "the fixture carries libc's debug file at $dbg" test -s fixture-libc.debug
cp -L /lib/x86_64-linux-gnu/libm.so.6 planted
docker cp planted "$fx:/lib/x86_64-linux-gnu/libz.so.1" && docker cp planted "$fx:$dbg"
okif $? "planted libm as libz.so.1 and as libc's debug file"
timeout -k 5 120 docker flame -d 5 --format folded -o h1.folded "$fx" 2>err3
okif $? "planted: exit 0"
like "$(cat h1.folded)" '(^|;)adler32(_z)? [0-9]+' \
    "libz still named from the mapped inode, not the file now at its path"
unlike "$(grep -E '^native;' h1.folded | grep -v 'adler32' | grep -E ';(sin|cos|exp|log|pow)[a-z0-9_]* [0-9]+$')" '.' \
    "no libm name in the native thread"
like "$(cat err3)" "the target's debug file for /lib/x86_64-linux-gnu/libc\\.so\\.6 has another build-id" \
    "the debug file with another build-id is refused, with a warning"
like "$(cat h1.folded)" '^native;([_a-z]*clone[0-9]*;)?\[libc\.so\.6\];thread_native_entry;' \
    "without it start_thread stays unnamed (never a wrong name)"
check "the JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
docker rm -f "$fx" >/dev/null

# --- hostile: a fake JVM mapping, executable, a 200 MB sparse "ELF", an ELF whose name holds a
# newline (maps shows it escaped), /dev/zero shared, and an ELF unlinked after mapping ---
. "$ROOT/tests/e2e/hostile-lib.sh"
fx=$(hstart "fakejvm ready" /hostile fakejvm ok libs) || bail "fakejvm libs did not start"
timeout -k 5 120 docker flame -d 2 --format folded -o fake.folded "$fx" 2>err4
okif $? "crafted mappings: exit 0"
like "$(cat err4)" 'pid 1: /tmp/huge\.so stays unnamed: larger than the per-file bound' \
    "the 200 MB file is refused for its size, with a warning"
like "$(cat err4)" 'pid 1: 1 executable mapping\(s\) with a name that cannot be used as a file name' \
    "the name with an escaped newline is refused, with a warning"
unlike "$(cat err4)" 'gone\.so|dev/zero' "the unlinked ELF is copied and /dev/zero (no ELF) skipped, quietly"
check "the fake JVM still runs" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
docker rm -f "$fx" >/dev/null
done_testing
