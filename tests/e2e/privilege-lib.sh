# Shared by tests/e2e/privilege-phases.t and host-privilege.t: the plugin and sidecar image set up,
# and the helpers that read a sidecar process's /proc/<pid>/status in each phase (bounded waits).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
real_plugin_setup

SETUP_CAPS=00000000002c00c0   # SETGID SETUID SYS_CHROOT SYS_PTRACE SYS_ADMIN
OPEN_CAPS=0000000000280000    # SYS_ADMIN SYS_PTRACE (per-CPU events on an engine without PERFMON)
PTRACE_CAPS=0000000000080000  # SYS_PTRACE (perf record -p)
NONE=0000000000000000
st() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null | head -1; }
uid() { st "$1" Uid | awk '{print $2}'; }   # effective uid
# wait (bounded, seconds) until pid $1 is stopped (State T)
wait_stopped() {
    local i
    for ((i = 0; i < $2 * 20; i++)); do
        case "$(st "$1" State)" in T*) return 0 ;; esac
        sleep 0.05
    done
    return 1
}
# the host pid of the child named $3 of sidecar pid $1 (bounded: $2 s); with $4 = T, only a
# stopped one
child_named() {
    local i c
    for ((i = 0; i < $2 * 20; i++)); do
        for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do
            [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$3" ] || continue
            case "${4:-}:$(st "$c" State)" in :* | T:T*) echo "$c"; return 0 ;; esac
        done
        sleep 0.05
    done
    return 1
}
# sidecar_of TARGET: the id of this test's sidecar whose target label is TARGET (a container id,
# or "host"), once the engine lists it (60 s); nothing when none appeared.
sidecar_id() {
    docker ps -q --filter label=com.docker-flame.sidecar=1 --filter "label=com.docker-flame.target=$1" \
        --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | head -1
}
sidecar_listed() { [ -n "$(sidecar_id "$1")" ]; }
sidecar_of() { wait_until 60 sidecar_listed "$1" && sidecar_id "$1"; }
# sidecar_pid SC: its host pid once the engine reports one (10 s), else 0
sidecar_pid() {
    local i p=0
    for ((i = 0; i < 100 && ${#1} > 0; i++)); do
        p=$(docker inspect -f '{{.State.Pid}}' "$1" 2>/dev/null); [ "${p:-0}" -gt 0 ] && break; sleep 0.1
    done
    echo "${p:-0}"
}
assert_status() { # PID PHASE UID CAPEFF CAPPRM
    local p=$1 ph=$2
    is "$(uid "$p")" "$3" "$ph: euid $3"
    is "$(st "$p" CapEff)" "$4" "$ph: CapEff $4"
    is "$(st "$p" CapPrm)" "$5" "$ph: CapPrm $5"
    is "$(st "$p" CapBnd)" "$SETUP_CAPS" "$ph: CapBnd is exactly CapAdd (engine)"
    is "$(st "$p" NoNewPrivs)" 1 "$ph: NoNewPrivs 1"
    is "$(st "$p" Seccomp)" 2 "$ph: Seccomp 2 (filter)"
    diag "$ph pid $p: $(grep -E '^(Uid|Cap|Seccomp|NoNewPrivs)' "/proc/$p/status" | tr '\n\t' '  ')"
}
