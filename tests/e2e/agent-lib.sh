# Shared by the agent's host-level tests (tests/e2e/agent-*.t: a JVM on this host, no Docker),
# on top of lib.sh (TAP, scratch dir $TMP = $T): cleanup of what the test started, the agent
# library, bounded waits, loading the agent through tests/agent/attach.py. Source it first; it
# leaves the cwd in $T.
#   PIDS+=(pid)   background children killed and waited for at exit (those not reaped yet),
#                 their /tmp/perf-<pid>.map removed
#   test_cleanup  a function the test may define: called first at exit
#   MOUNTS+=(dir) unmounted at exit
#   compile_java SRC...   javac into $T/classes (bails out on failure)
. "$(dirname "$0")/lib.sh"
SO="$BUILD/libflameagent.so"
ATTACH="$ROOT/tests/agent/attach.py"

PIDS=()
MOUNTS=()
T=$TMP
lib_cleanup_extra() {
    local p m
    declare -F test_cleanup >/dev/null && test_cleanup # the test's own, first
    # only children not reaped yet: a pid the test already waited for may be another's by now
    local live=" $(jobs -p | tr '\n' ' ') "
    for p in "${PIDS[@]}"; do [[ $live == *" $p "* ]] && kill "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do [[ $live == *" $p "* ]] && wait "$p" 2>/dev/null; done
    for p in "${PIDS[@]}"; do rm -f "/tmp/perf-$p.map"; done
    for m in "${MOUNTS[@]}"; do [ -n "$m" ] && umount "$m" 2>/dev/null; done
}

if [ ! -f "$SO" ]; then
    make -C "$ROOT" -s build/libflameagent.so >&2 || { echo "Bail out! cannot build $SO"; exit 1; }
fi
command -v javac >/dev/null && command -v python3 >/dev/null ||
    { echo "Bail out! need javac and python3 on PATH"; exit 1; }
compile_java() {
    mkdir -p "$T/classes"
    javac -nowarn -XDsuppressNotes -d "$T/classes" "$@" 2>/dev/null ||
        { echo "Bail out! javac $* failed"; exit 1; }
}
cd "$T" || exit 1 # the JVMs' cwd: attach.py drops its .attach_pid trigger there

# Wait (bounded) until file $1 contains the fixed string $2; $3 = seconds.
poll_grep() {
    local deadline=$((SECONDS + $3))
    until grep -aqF -- "$2" "$1" 2>/dev/null; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# load PID OPTIONS [LIB]: the agent's return code ("return code: N" in HotSpot's reply, whose status
# is 0 whenever Agent_OnAttach ran); 100 if the attach itself failed. Reply in $LOAD_OUT.
load() {
    LOAD_OUT=$(python3 "$ATTACH" "$1" load "${3:-$SO}" true "$2" 2>&1) || return 100
    local st rc
    st=$(printf '%s\n' "$LOAD_OUT" | sed -n '1s/^status=//p')
    rc=$(printf '%s\n' "$LOAD_OUT" | sed -n 's/^return code: //p')
    [ "$st" = 0 ] && [ -n "$rc" ] || return 101
    return "$rc"
}
