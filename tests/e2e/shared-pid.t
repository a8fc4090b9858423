#!/usr/bin/env bash
# Nothing of another container or of the host in a profile, never an agent injected outside the
# target (docs/HARDENING.md "Shared PID namespaces").
#  1. A target started --pid container:<other JVM's container> and one started --pid host: refused
#     (exit 2, one line, no sidecar created) unless --shared-pid; with it, per CPU, per thread and
#     in top, only the target's own JVM: the other JVM gets no agent (its /proc/<pid>/maps), no
#     attach (no .java_pid socket in its /tmp, no thread dump in its output) and none of its
#     samples appear (its thread "native", libz's adler32); nor does a busy host process.
#  2. A target whose namespace others joined: a JVM in a debug container started
#     --pid container:<target>, a busy debug container, an `nsenter -p` from the host, and another
#     docker-flame sidecar (a `top`, whose perf script runs every second): none of them is
#     attached or sampled, per CPU and per thread; `top` shows no `perf` of its own; the no-JVM
#     error's "processes seen" lists the target's processes only.
# Before: (1) profiled, 2 JVMs attached; (2) the debug JVM attached and sampled, `perf` roots in
# top (6-44 % of its samples), "processes seen" listing flame-sidecar processes.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
command -v gcc >/dev/null || bail "gcc is needed to build the busy process"
command -v nsenter >/dev/null || bail "nsenter (util-linux) is needed"

J=/opt/java/openjdk/bin/java
bg=()
lib_cleanup_extra() { local p; for p in "${bg[@]}"; do kill "$p" 2>/dev/null; done; }

cat >busy.c <<'EOF'
/* a recognisable busy loop: its name must never show in the target's profile */
#include <sys/prctl.h>
volatile unsigned long sink;
int main(int argc, char **argv)
{
    prctl(PR_SET_NAME, argc > 1 ? argv[1] : "spbusy");
    for (;;)
        for (unsigned long i = 0; i < 1000000; i++)
            sink += i * i;
}
EOF
gcc -O1 -static -o busy busy.c || bail "cannot build the busy process"

# jvm NAME PIDMODE [native]: a fixture JVM (its thread "native" in libz's adler32 with native)
jvm() {
    local id opts=(-XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app) args=()
    [ "${3:-}" = native ] && opts+=(-XX:+UnlockDiagnosticVMOptions -XX:-UseAdler32Intrinsics) &&
        args=(--native)
    id=$(docker run -d --network none --label docker-flame-test=1 \
        --label docker-flame-test.owner="$FLAME_TEST_OWNER" --name "$1" ${2:+--pid "$2"} \
        flame-fixture-jvm:latest "$J" "${opts[@]}" FlameFixture "${args[@]}") || return 1
    timeout 30 grep -q -m1 'FlameFixture ready' <(docker logs -f "$id" 2>&1) || return 1
    echo "$id"
}
sidecars() { docker ps -aq --filter label=com.docker-flame.sidecar=1 | wc -l; }
# snapshots FILE N: top (not on a terminal) printed at least N snapshots into FILE
snapshots() { [ "$(top_snapshots "$1")" -ge "$2" ]; }
# jvms ERRFILE: how many JVMs the profile's summary lists
jvms() { grep -c '^  JVM pid' "$1"; }
agent_in() { local n; n=$(grep -c libflameagent "/proc/$(target_pid "$1")/maps" 2>/dev/null); echo "${n:-0}"; }
attach_socket_in() { ls -A "/proc/$(target_pid "$1")/root/tmp" 2>/dev/null | grep -c '^\.java_pid'; }
# untouched NAME LABEL: the other JVM got no agent, no attach socket, no SIGQUIT (thread dump)
untouched() {
    is "$(agent_in "$1")" 0 "$2: no agent in $1's JVM (/proc/<pid>/maps)"
    is "$(attach_socket_in "$1")" 0 "$2: no attach socket in $1's /tmp"
    unlike "$(docker logs "$1" 2>&1)" 'Full thread dump' "$2: $1's JVM printed no thread dump (no SIGQUIT)"
}
# only_own FILE LABEL [NAMES_RE]: every stack is one of the target's threads; none of the others'
only_own() {
    local roots
    roots=$(cut -d';' -f1 "$1" 2>/dev/null | sed 's/ [0-9]*$//' | sort -u | tr '\n' ' ')
    diag "$2: roots: $roots"
    like "$(cat "$1" 2>/dev/null)" 'FlameFixture\.(isPrime|countPrimes|mixHashes|work)' \
        "$2: the target's own Java methods are there"
    unlike "$(cut -d';' -f1 "$1")" "^(native|perf|flame-sidecar|spbusy|sphostbusy|spdbgbusy|spnsenter|${3:-none})( [0-9]+)?\$" \
        "$2: no root of another process (the other JVM's native thread, perf, a sidecar, busy loops)"
    unlike "$(cat "$1")" '(^|;)adler32(_z)?( |;|$)' "$2: no frame of the other JVM (adler32)"
    unlike "$(cat "$1")" '^java-[0-9]+ ' "$2: one JVM's stacks (a second JVM would root each in java-<pid>)"
}

other=$(jvm spother "" native) || bail "the other JVM did not start"
web=$(jvm spweb "container:$other") || bail "the target (--pid container:spother) did not start"

# --- 1a. --pid container:X: refused without --shared-pid, before anything is created ---
n0=$(sidecars)
timeout -k 5 60 docker flame -d 2 --format folded -o refused.folded spweb 2>err1
is "$?" 2 "--pid container:X: exit 2"
is "$(wc -l <err1)" 1 "one line"
like "$(cat err1)" "container spweb shares another container's PID namespace \(--pid container:$other\).*--shared-pid" \
    "the line says what and what to do"
is "$(sidecars)" "$n0" "no sidecar was created"
check "no profile written" test ! -e refused.folded
timeout -k 5 30 docker flame top spweb </dev/null >/dev/null 2>errt1
is "$?" 2 "top: refused too (exit 2)"
untouched spother "refused"

# --- 1b. --shared-pid: only the target's own processes ---
timeout -k 5 120 docker flame --shared-pid -d 4 --format folded -o c1.folded spweb 2>errc1
rc=$?
okif "$rc" "--shared-pid, per CPU: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat errc1)"
is "$(jvms errc1)" 1 "one JVM found (the target's), not the other's"
only_own c1.folded "--pid container:X, per CPU"
timeout -k 5 120 docker flame --shared-pid -d 4 --sampling thread --format folded -o c2.folded spweb 2>errc2
rc=$?
okif "$rc" "--shared-pid, per thread: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat errc2)"
only_own c2.folded "--pid container:X, per thread"
timeout -k 10 120 docker flame top --shared-pid spweb --interval 1s --record ct.folded >ct.txt 2>errct &
tpid=$!
wait_until 90 snapshots ct.txt 4 || fdiag "top: fewer than 4 snapshots: $(cat errct)"
ctrl_c "$tpid"
wait "$tpid"
is "$?" 0 "top --shared-pid: exit 0 on Ctrl-C"
only_own ct.folded "--pid container:X, top"
untouched spother "--shared-pid"
docker rm -f spweb >/dev/null

# --- 1c. --pid host: refused; with --shared-pid, nothing of the host and no other JVM ---
nice -n 19 ./busy sphostbusy &
bg+=($!)
host=$(jvm sphost host) || bail "the target (--pid host) did not start"
timeout -k 5 60 docker flame -d 2 sphost 2>errh1
is "$?" 2 "--pid host: exit 2"
like "$(cat errh1)" "container sphost shares the host's PID namespace \(--pid host\)" "the line says so"
timeout -k 5 120 docker flame --shared-pid -d 4 --format folded -o h1.folded sphost 2>errh2
rc=$?
okif "$rc" "--pid host --shared-pid: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat errh2)"
is "$(jvms errh2)" 1 "one JVM found: the target's"
only_own h1.folded "--pid host"
untouched spother "--pid host"
docker rm -f sphost >/dev/null

# --- 2. others that joined the target's namespace ---
fx=$(jvm spfx "") || bail "the target did not start"
dbg=$(jvm spdbg "container:$fx" native) || bail "the debug JVM did not start"
busyc=$(docker run -d --network none --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
    --pid "container:$fx" -v "$TMP/busy:/busy:ro" flame-fixture-jvm:latest /busy spdbgbusy) ||
    bail "the busy debug container did not start"
nsenter -t "$(target_pid spfx)" -p -- nice -n 19 ./busy spnsenter &
bg+=($!)
# another docker-flame sidecar in the namespace: a top, whose perf script runs every window
timeout -k 10 300 docker flame top spfx --interval 1s --record bgtop.folded >bgtop.txt 2>errbg &
bgtop=$!
wait_until 90 snapshots bgtop.txt 3 || fdiag "the background top did not start: $(cat errbg)"
timeout -k 5 120 docker flame -d 5 --format folded -o f1.folded spfx 2>errf1
rc=$?
okif "$rc" "joined namespace, per CPU: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat errf1)"
is "$(jvms errf1)" 1 "one JVM found (not the debug container's)"
only_own f1.folded "joined namespace, per CPU"
timeout -k 5 120 docker flame -d 4 --sampling thread --format folded -o f2.folded spfx 2>errf2
rc=$?
okif "$rc" "joined namespace, per thread: exit 0"
[ "$rc" = 0 ] || fdiag "$(cat errf2)"
only_own f2.folded "joined namespace, per thread"
timeout -k 5 60 docker flame --pid 999 spfx 2>errf3
is "$?" 4 "--pid 999: exit 4"
seen=$(sed -n 's/.*processes seen: //p' errf3)
diag "processes seen: $seen"
like "$seen" '^[0-9]+ java$' "processes seen: the target's JVM only (no sidecar, debug container, nsenter)"
ctrl_c "$bgtop"
wait "$bgtop"
is "$?" 0 "the background top: exit 0 on Ctrl-C"
only_own bgtop.folded "top next to other sidecars"
share=$(awk '{ t += $NF; if ($1 ~ /^perf;/) p += $NF } END { printf "%d", t ? 100 * p / t : 0 }' bgtop.folded)
is "$share" 0 "top: 0 % of its samples are its own perf (before: 6-44 %)"
untouched spdbg "joined namespace"

done_testing
