# The one library of the end-to-end tests (bash, TAP). Source it first:
#   . "$(dirname "$0")/lib.sh"
# Gives: ROOT BUILD VERSION, TAP (ok/nok/okif/check/is/like/unlike/diag/fdiag/skip_or_fail/bail/
# done_testing), $TMP (this test's scratch dir, removed at exit; lib_cleanup_extra, when the test
# or a helper library defines it, runs first),
# fixture VARIANT (starts a fixture container owned by this test, prints its id),
# ensure_sidecar_image, plugin_env (DOCKER_CONFIG with our plugin), no_sidecar_left, JDK25 IMAGE25 and
# jdk25_fixture_image (the Temurin 25 fixture image), and a cleanup trap that removes every
# container this test started and its temp dir.
set -u
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=$ROOT/build
VERSION=$(sed -n 's/^VERSION *:= *//p' "$ROOT/Makefile")
SIDECAR_IMAGE=docker-flame-sidecar:$VERSION
export FLAME_TEST_OWNER="t$$-$(date +%s%N)"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/flame-test.XXXXXX")
_tap_n=0
_tap_fail=0

ok()   { _tap_n=$((_tap_n + 1)); echo "ok $_tap_n - $*"; }
nok()  { _tap_n=$((_tap_n + 1)); _tap_fail=$((_tap_fail + 1)); echo "not ok $_tap_n - $*"; echo "# failed test $_tap_n: $*" >&2; }
# diag: information (stdout, shown by prove -v); fdiag: why a check failed (stderr, which prove
# always shows, so a CI log carries it)
diag() { printf '%s\n' "$@" | sed 's/^/# /'; }
fdiag() { printf '%s\n' "$@" | sed 's/^/# /' >&2; }
# okif STATUS DESC: ok when STATUS is 0 (for `cmd; okif $? "desc"`)
okif() { local c=$1; shift; if [ "$c" -eq 0 ]; then ok "$*"; else nok "$*"; fi; }
# check DESC CMD...: ok when CMD succeeds
check() { local d=$1; shift; if "$@"; then ok "$d"; else nok "$d"; fi; }
is()   { if [ "$1" = "$2" ]; then ok "$3"; else nok "$3"; fdiag "got:  '$1'" "want: '$2'"; fi; }
like() { if printf '%s' "$1" | grep -Eq -- "$2"; then ok "$3"; else nok "$3"; fdiag "no match for /$2/ in:" "$(printf '%s' "$1" | head -c 2000)"; fi; }
unlike() { if printf '%s' "$1" | grep -Eq -- "$2"; then nok "$3"; fdiag "unexpected /$2/ in:" "$(printf '%s' "$1" | head -c 2000)"; else ok "$3"; fi; }
# A test this machine cannot run: a skip on a laptop, a failure under CI=true.
skip_or_fail() {
    if [ "${CI:-}" = true ]; then nok "$* (cannot run, and CI=true forbids skipping)"; else _tap_n=$((_tap_n + 1)); echo "ok $_tap_n # SKIP $*"; fi
}
done_testing() { echo "1..$_tap_n"; [ "$_tap_fail" -eq 0 ]; exit $?; }
# bail out of the whole file with a clear reason
bail() { echo "Bail out! $*"; exit 1; }

engine_up() { docker info >/dev/null 2>&1; }
fixture() { "$ROOT/tests/fixtures/run.sh" "$@"; }
ensure_fixture_image() { "$ROOT/tests/fixtures/build.sh" >/dev/null; }
# One check: none of the sidecars this test's profiles started is left, stopped or running (the
# plugin removes its own, also after an error); another test's, running at the same time on the
# engine, are not counted.
no_sidecar_left() {
    local left
    left=$(docker ps -aq --filter label=com.docker-flame.sidecar=1 --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | wc -l)
    is "$left" 0 "no sidecar left"
}
# The second JDK of the tests that check a newer JVM too (its frames, AQS, JFR events differ
# from 17's): a Temurin 25 JDK on the host (FIXTURE_JDK25=DIR), the fixture image built from it.
JDK25=${FIXTURE_JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
IMAGE25=flame-fixture-jvm25:latest
# jdk25_fixture_image [--need WHY] [TOOL...]: builds $IMAGE25 from $JDK25 and returns 0, or,
# when $JDK25 lacks bin/jlink (or bin/TOOL: jfr for the JFR comparisons), returns 1 with a note:
# a host may well have no Temurin 25, and its check is an extra one. --need: the test is about
# two JDKs and has nothing to check without one: a skip_or_fail saying WHY instead. A failed
# build bails: the JDK is there, so the image must be.
jdk25_fixture_image() {
    local need= t
    [ "${1:-}" = --need ] && { need=$2; shift 2; }
    for t in jlink "$@"; do
        [ -x "$JDK25/bin/$t" ] && continue
        if [ -n "$need" ]; then
            skip_or_fail "no JDK 25 at $JDK25 (FIXTURE_JDK25=DIR): $need"
        else
            diag "no JDK 25 at $JDK25: its check is not run (FIXTURE_JDK25=DIR to point at one)"
        fi
        return 1
    done
    FIXTURE_JDK=$JDK25 FLAME_FIXTURE_IMAGE=$IMAGE25 "$ROOT/tests/fixtures/build.sh" >/dev/null ||
        bail "cannot build the JDK 25 fixture image"
}
# Import build/flame-sidecar.tar as the sidecar image unless the engine already has exactly
# this tarball (label com.docker-flame.tar-sha256, the same key install.sh uses).
ensure_sidecar_image() {
    [ -f "$BUILD/flame-sidecar.tar" ] || return 1
    local want have
    want=$(sha256sum "$BUILD/flame-sidecar.tar" | cut -c1-16)
    have=$(docker image inspect -f '{{index .Config.Labels "com.docker-flame.tar-sha256"}}' "$SIDECAR_IMAGE" 2>/dev/null)
    [ "$have" = "$want" ] && return 0
    local old; old=$(docker image inspect -f '{{.Id}}' "$SIDECAR_IMAGE" 2>/dev/null)
    docker import --change "LABEL com.docker-flame.tar-sha256=$want" "$BUILD/flame-sidecar.tar" "$SIDECAR_IMAGE" >/dev/null || return 1
    # the build it replaced would stay as an untagged image, one more per build (as the plugin)
    [ -z "$old" ] || docker rmi "$old" >/dev/null 2>&1 || true
}
# Point the docker CLI at a private config dir whose only plugin is our build.
plugin_env() {
    export DOCKER_CONFIG=$TMP/docker-config
    mkdir -p "$DOCKER_CONFIG/cli-plugins"
    ln -sf "$BUILD/docker-flame" "$DOCKER_CONFIG/cli-plugins/docker-flame"
}
# plugin_under PID: the docker-flame plugin process under a backgrounded `timeout docker flame`
# (timeout -> the CLI -> the plugin), bounded (10 s). A terminal's Ctrl-C reaches that process
# directly. Its comm is checked before its arguments: a child the CLI has forked but not yet
# exec'd still carries the CLI's own command line ("docker flame ..."), and the short-lived
# `docker-flame docker-cli-plugin-metadata` the CLI runs first is not the one either.
plugin_under() {
    local i c p
    for ((i = 0; i < 100; i++)); do
        for c in $(pgrep -P "$1"); do
            for p in $(pgrep -P "$c"); do
                [ "$(cat /proc/"$p"/comm 2>/dev/null)" = docker-flame ] &&
                    [ "$(tr '\0' ' ' 2>/dev/null < /proc/"$p"/cmdline | cut -d' ' -f2)" = flame ] &&
                    { echo "$p"; return 0; }
            done
        done
        sleep 0.1
    done
    return 1
}
# The agent's stable tag, as sidecar/inject.c computes it (FNV-1a of the agent file in the
# sidecar image): a target sees /tmp/.docker-flame-<tag> and the map /tmp/perf-<pid>.<tag>.map.
# A hostile target can compute it too, which the tests do to plant things there.
agent_stable_tag() {
    tar -xOf "$BUILD/flame-sidecar.tar" ./opt/docker-flame/agent/libflameagent.so | python3 -c '
import sys
h = 0xcbf29ce484222325
for b in sys.stdin.buffer.read():
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
print("%016x" % h)'
}
# wait_until SECS CMD...: until CMD succeeds, or SECS seconds pass (1 then): an event polled with
# a bound, never a sleep standing in for one.
wait_until() {
    local secs=$1; shift
    local end=$(($(date +%s%N) / 1000000 + secs * 1000))
    until "$@"; do
        [ $(($(date +%s%N) / 1000000)) -ge $end ] && return 1
        sleep 0.1
    done
}
# top_snapshots FILE: how many snapshots `docker flame top` (not on a terminal) printed into FILE;
# 0 while FILE does not exist yet (grep -c prints nothing then, and `[ "" -ge N ]` is an error).
top_snapshots() {
    local n
    n=$(grep -c '^--- docker flame top' "$1" 2>/dev/null)
    echo "${n:-0}"
}
# The preamble of the tests that run the real plugin with the real sidecar on a fixture JVM: an
# engine, the built plugin and sidecar, the fixture and sidecar images, the plugin as the CLI's
# only one, none of the sidecar overrides the stub tests use, and $TMP as the working directory.
real_plugin_setup() {
    engine_up || bail "no Docker engine answers"
    [ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
    [ -f "$BUILD/flame-sidecar.tar" ] || { skip_or_fail "build/flame-sidecar.tar missing (make)"; done_testing; }
    ensure_fixture_image || bail "cannot build the fixture image"
    ensure_sidecar_image || bail "cannot import the sidecar image"
    plugin_env
    unset DOCKER_FLAME_SIDECAR_IMAGE DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_CAPS \
        DOCKER_FLAME_SIDECAR_TEST_STOP DOCKER_FLAME_SIDECAR_TEST_NO_PERFMON
    cd "$TMP" || bail "cd $TMP"
}
# The docker CLI of a backgrounded `timeout ... docker ...` (timeout's only child), or $1 itself.
# A test's Ctrl-C goes to the CLI, not to timeout: timeout passes a signal on twice (to its child
# and to its process group), and the CLI SIGKILLs its plugin after repeated signals (seen as a
# flaky exit 130 with the sidecar left behind).
cli_pid() {
    local c
    c=$(pgrep -P "$1" | head -1)
    echo "${c:-$1}"
}
# ctrl_c PID: what a terminal's Ctrl-C does to a `docker flame` run: SIGINT to every process of
# the foreground group, i.e. the docker CLI and the plugin it runs. PID: the CLI, or a `timeout`
# wrapping it. (Docker CLI 28 without a terminal also closes the plugin socket on SIGINT; CLI
# 20.10 ignores the signal and relies on the plugin getting it: both see one Ctrl-C.)
ctrl_c() {
    local cli p
    cli=$(cli_pid "$1")
    p=$(pgrep -P "$cli" | head -1)
    kill -INT "$cli" ${p:+"$p"} 2>/dev/null
}
# The pid of a container's main process as the host sees it.
host_pid() { docker inspect -f '{{.State.Pid}}' "$1"; }
# target_pid CONTAINER: host_pid, checked to be a process of that container (its cgroup names
# the container's id, its mount namespace is not ours). A pid of 0 (the engine still restoring
# the container) or a stale one reused by a host process would make /proc/<pid>/root the host's
# root, and a listing of "the target's /tmp" would silently read the host's /tmp. Fails with a
# diagnostic instead.
target_pid() {
    local id pid
    id=$(docker inspect -f '{{.Id}}' "$1" 2>/dev/null) && pid=$(host_pid "$1" 2>/dev/null)
    if [ -z "${pid:-}" ] || [ "$pid" = 0 ] || ! grep -q "${id:-none}" "/proc/$pid/cgroup" 2>/dev/null ||
        [ "$(readlink "/proc/$pid/ns/mnt")" = "$(readlink /proc/self/ns/mnt)" ]; then
        fdiag "target_pid: pid '${pid:-}' of container $1 is not a process of that container"
        return 1
    fi
    echo "$pid"
}
# target_tmp CONTAINER: the target's /tmp as its JVM sees it, one entry per line, sorted, without
# what the JVM itself owns (its attach socket .java_pid<N>, hsperfdata_<user>). Fails (and prints
# nothing) when the container's pid cannot be verified (target_pid).
target_tmp() {
    local pid
    pid=$(target_pid "$1") || return 1
    ls -A "/proc/$pid/root/tmp" | grep -Ev '^(\.java_pid[0-9]+|hsperfdata_.*)$' | sort
    return 0
}
# tmp_is CONTAINER WANT DESC: the target's /tmp listing (target_tmp, space-joined) is WANT.
tmp_is() {
    local got
    if got=$(target_tmp "$1"); then is "$(printf '%s' "$got" | tr '\n' ' ')" "$2" "$3"; else nok "$3"; fi
}
# Folded-text arithmetic of the mode tests. sum FILE [ERE]: the sum of the counts of FILE's lines
# whose stack (the line without its count) matches ERE (default: every line). within A B LO HI:
# A / B is in [LO, HI] (false when B is 0). ratio A B: A / B to 3 places (-1 when B is 0).
sum() { awk -v re="${2:-.}" '{ n = $NF; sub(/ [0-9]+$/, ""); if ($0 ~ re) s += n } END { printf "%.0f\n", s + 0 }' "$1"; }
within() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { r = b ? a / b : -1; exit !(r >= lo && r <= hi) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b ? a / b : -1 }'; }
# sidecar_recording [TARGET]: a sidecar of this test run (of TARGET's container id, if given) has
# its perf events open, i.e. it is past attach and recording. The event a test waits for before
# it starts a second profile or sends Ctrl-C, instead of a sleep.
sidecar_recording() {
    local id p t filter=()
    [ -n "${1:-}" ] && filter=(--filter "label=com.docker-flame.target=$1")
    id=$(docker ps -q --filter label=com.docker-flame.sidecar=1 "${filter[@]}" \
        --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" | head -1)
    [ -n "$id" ] && p=$(docker inspect -f '{{.State.Pid}}' "$id" 2>/dev/null) && [ "${p:-0}" != 0 ] || return 1
    for t in $p $(pgrep -P "$p"); do
        ls -l "/proc/$t/fd" 2>/dev/null | grep -q 'perf_event' && return 0
    done
    return 1
}
# Mounts in a process's mount namespace that mention docker-flame (should be none after a run).
flame_mounts() { grep -c 'docker-flame' "/proc/$1/mountinfo" 2>/dev/null || true; }

_cleanup() {
    # a write that failed before (stdout closed, or a bench piped into head) leaves an error
    # that bash's next builtin reports and fails with: an empty echo takes it, not the test
    # below (which would skip the extra cleanup and leave, e.g., a bench's server running)
    echo -n 2>/dev/null
    declare -F lib_cleanup_extra >/dev/null && lib_cleanup_extra
    local ids
    ids=$(docker ps -aq --filter "label=docker-flame-test.owner=$FLAME_TEST_OWNER" 2>/dev/null)
    [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
    rm -rf "$TMP"
}
trap _cleanup EXIT
trap 'exit 130' INT TERM
