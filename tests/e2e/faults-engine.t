#!/usr/bin/env bash
# The engine restarting mid-profile, on a PRIVATE second dockerd (the shared engine is never
# touched): own --data-root/--exec-root/--pidfile/-H unix socket under this test's temp dir,
# --bridge=none --iptables=false --ip6tables=false, --live-restore (containers survive the
# engine, as in production). The fixture image is copied in with docker save | load; the plugin
# imports the sidecar itself. dockerd is stopped by pid (SIGTERM) mid-recording: the plugin must
# end within a bound, exit 125 with one clear line naming the sidecar and `docker flame gc`;
# after the engine is back, gc removes the sidecar (SIGTERM first, so it restores the target):
# the JVM runs, no mount, its /tmp clean. Every wait is bounded; dockerd and its containerd are
# stopped by pid at the end.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
[ -f "$BUILD/flame-sidecar.tar" ] || { skip_or_fail "build/flame-sidecar.tar missing (make)"; done_testing; }
command -v dockerd >/dev/null && [ "$(id -u)" = 0 ] || { skip_or_fail "needs root and dockerd"; done_testing; }
ensure_fixture_image || bail "cannot build the fixture image"
plugin_env
unset DOCKER_FLAME_SIDECAR_IMAGE DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_CAPS DOCKER_FLAME_SIDECAR_TEST_STOP
cd "$TMP"
. "$ROOT/tests/e2e/engine2-lib.sh"
SOCK=$ENGINE2_SOCK
dockerd2() { engine2_start --live-restore; }
stop_dockerd2() { engine2_stop; }
teardown() {
    engine2_teardown
    _cleanup
}
trap teardown EXIT
dockerd2 || { diag "$(tail -20 "$D2/log")"; bail "the private dockerd did not start"; }
docker save flame-fixture-jvm:latest | docker -H "$SOCK" load >/dev/null || bail "cannot load the fixture image"
export DOCKER_HOST=$SOCK
fx=$(fixture pid1) || bail "fixture did not start on the private engine"
fxid=$(docker inspect -f '{{.Id}}' "$fx")
timeout -k 10 120 docker flame -q -d 1 -o warm.svg "$fx" >/dev/null 2>warm.err; rc=$?
is "$rc" 0 "private engine: a profile works (the plugin imported the sidecar)" || diag "$(cat warm.err)"

timeout -k 10 150 docker flame -d 0 -o e.svg "$fx" 2>e.err &
bg=$!
wait_for 'recording [0-9]+s .* [1-9][0-9]* samples' e.err 60 || nok "no samples within 60 s"
stop_dockerd2
s=$(date +%s)
wait_pid "$bg" 90
diag "$(cat e.err)"
is "$RC" 125 "engine stopped mid-profile: exit 125"
like "$(tail -1 e.err)" 'could not remove sidecar [0-9a-f]{12} .*daemon.*: remove it with `docker flame gc`' "engine stopped: one clear line naming the sidecar and gc"
check "engine stopped: the plugin ended within 60 s" test $(($(date +%s) - s)) -le 60
check "engine stopped: no temp output file" test -z "$(ls -A | grep '^\.e\.svg')"

dockerd2 || bail "the private dockerd did not come back"
hp=$(target_pid "$fx") || bail "the target's pid after the restart is not the container's"
check "engine back: the JVM survived (live-restore)" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
out=$(timeout -k 10 120 docker flame gc 2>&1); rc=$?
is "$rc" 0 "gc after the restart: exit 0"
like "$out" 'removed sidecar [0-9a-f]{12} \(was running\)' "gc removed the orphaned sidecar"
is "$(docker ps -aq --filter label=com.docker-flame.sidecar=1 | wc -l)" 0 "no sidecar left"
is "$(flame_mounts "$hp")" 0 "no docker-flame mount in the target"
tmp_is "$fx" "" "the target's /tmp is clean"
timeout -k 10 120 docker flame -q -d 1 -o after.svg "$fx" >/dev/null 2>&1; rc=$?
is "$rc" 0 "a new profile works after the restart"
done_testing
