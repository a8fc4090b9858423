# Shared by tests/e2e/privilege-phases.t and host-privilege.t: the plugin and sidecar image set up,
# the helpers that read a sidecar process's /proc/<pid>/status in each phase (bounded waits), and
# the attacker's probe (`unreachable`).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
real_plugin_setup
# The targets run the hostile fixture image: the fixture JVM plus /hostile, whose `probe` mode is
# the attacker (the images have no shell); the same static binary probes from the host.
"$ROOT/tests/fixtures/hostile/build.sh" >/dev/null || bail "cannot build the hostile fixture image"
export FLAME_FIXTURE_IMAGE=flame-fixture-hostile:latest
HOSTILE_BIN=$BUILD/fixtures/hostile/rootfs/hostile
[ -x "$HOSTILE_BIN" ] || bail "$HOSTILE_BIN missing"

SETUP_CAPS=00000000002c00c0   # SETGID SETUID SYS_CHROOT SYS_PTRACE SYS_ADMIN
OPEN_CAPS=0000000000280000    # SYS_ADMIN SYS_PTRACE (per-CPU events on an engine without PERFMON)
PTRACE_CAPS=0000000000080000  # SYS_PTRACE (perf record -p)
NONE=0000000000000000
st() { sed -n "s/^$2:[[:space:]]*//p" "/proc/$1/status" 2>/dev/null | head -1; }
uid() { st "$1" Uid | awk '{print $2}'; }   # effective uid
gid() { st "$1" Gid | awk '{print $2}'; }   # effective gid
# The sidecar's unprivileged processes run as a uid chosen per run in this range (sidecar/harden.c),
# never 65534: is_run_uid UID
RUN_UID_LO=1895825408
RUN_UID_HI=2130706432
is_run_uid() { [ "${1:-0}" -ge $RUN_UID_LO ] && [ "$1" -lt $RUN_UID_HI ]; }
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
assert_status() { # PID PHASE UID CAPEFF CAPPRM (UID "run": the run's own uid, as gid too)
    local p=$1 ph=$2
    if [ "$3" = run ]; then
        check "$ph: euid and egid the run's own uid ($(uid "$p"))" is_run_uid "$(uid "$p")"
        is "$(gid "$p")" "$(uid "$p")" "$ph: egid = euid"
    else
        is "$(uid "$p")" "$3" "$ph: euid $3"
    fi
    is "$(st "$p" CapEff)" "$4" "$ph: CapEff $4"
    is "$(st "$p" CapPrm)" "$5" "$ph: CapPrm $5"
    is "$(st "$p" CapBnd)" "$SETUP_CAPS" "$ph: CapBnd is exactly CapAdd (engine)"
    is "$(st "$p" NoNewPrivs)" 1 "$ph: NoNewPrivs 1"
    is "$(st "$p" Seccomp)" 2 "$ph: Seccomp 2 (filter)"
    diag "$ph pid $p: $(grep -E '^(Uid|Cap|Seccomp|NoNewPrivs)' "/proc/$p/status" | tr '\n\t' '  ')"
}
# tree PID: PID and all its descendants (host pids), parents first
tree() {
    local c
    echo "$1"
    for c in $(cat /proc/"$1"/task/*/children 2>/dev/null); do tree "$c"; done
}
# find_in_tree ROOT SECONDS COMM [T]: the first process named COMM below ROOT (with T: stopped)
find_in_tree() {
    local i c
    for ((i = 0; i < $2 * 20; i++)); do
        for c in $(tree "$1"); do
            [ "$c" != "$1" ] && [ "$(cat /proc/"$c"/comm 2>/dev/null)" = "$3" ] || continue
            case "${4:-}:$(st "$c" State)" in :* | T:T*) echo "$c"; return 0 ;; esac
        done
        sleep 0.05
    done
    return 1
}
nspid() { st "$1" NSpid | awk '{print $NF}'; } # its pid in the innermost PID namespace
# unreachable PHASE FX KEY PID...: no unprivileged attacker reaches any of these sidecar processes
# (host pids; KEY, the process this phase is about, must be among the ones alive when probed,
# others may have ended meanwhile: `top` starts a recorder per window): `hostile probe` as uid/gid
# 65534 without capabilities, on the host and inside the target FX ("" for none: the host
# sidecar is in no container's PID namespace), opens none of /proc/<pid>/root, /proc/<pid>/mem or
# what /proc/<pid>/fd/2 points to, and kill(pid, 0) is refused; root in the target, with the
# engine's default capabilities, opens none of them either (it may signal: the engine gives it
# CAP_KILL, docs/HARDENING.md).
DENIED='(EACCES|EPERM)'
PROBE_DENIED="^probe [0-9]+ (gone .*|exists root:$DENIED fd:$DENIED mem:$DENIED kill:$DENIED)\$"
PROBE_ROOT_DENIED="^probe [0-9]+ (gone .*|exists root:$DENIED fd:$DENIED mem:$DENIED kill:.*)\$"
probed() { # DESC OUTPUT N REGEX KEY
    local got bad
    got=$(printf '%s\n' "$2" | grep -c '^probe [0-9]')
    bad=$(printf '%s\n' "$2" | grep '^probe [0-9]' | grep -Ev "$4")
    if [ "$got" = "$3" ] && [ -z "$bad" ] && printf '%s\n' "$2" | grep -q "^probe $5 exists"; then ok "$1"
    else nok "$1"; fdiag "$2"; fi
}
unreachable() {
    local ph=$1 fx=$2 key=$3 p ns=(); shift 3
    [ $# -gt 0 ] || { nok "$ph: no sidecar process to probe"; return; }
    diag "$ph: probing $(for p in "$@"; do printf '%s(%s,uid %s) ' "$p" "$(cat /proc/"$p"/comm 2>/dev/null)" "$(uid "$p")"; done)"
    probed "$ph: a uid-65534 process on the host reaches none of the $# sidecar processes" \
        "$("$HOSTILE_BIN" probe "$@" 2>&1)" $# "$PROBE_DENIED" "$key"
    [ -n "$fx" ] || return 0
    for p in "$@"; do ns+=("$(nspid "$p")"); done
    key=$(nspid "$key")
    probed "$ph: a uid-65534 process in the target reaches none of them" \
        "$(docker exec --user 0 "$fx" /hostile probe "${ns[@]}" 2>&1)" $# "$PROBE_DENIED" "$key"
    probed "$ph: root in the target opens none of them" \
        "$(docker exec --user 0 "$fx" /hostile probe --root "${ns[@]}" 2>&1)" $# "$PROBE_ROOT_DENIED" "$key"
}
