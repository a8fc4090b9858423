#!/usr/bin/env bash
# The test bed itself: a real engine answers, the fixture image runs a JVM as a uid that exists
# only in the container with no shell, and a container sharing its PID namespace can run perf on
# it and get samples. (This uses the host's perf bind-mounted read-only, so it checks the bed
# independently of our sidecar.)
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
ensure_fixture_image || bail "cannot build the fixture image"

fx=$(fixture pid1) || bail "fixture did not start"
is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "fixture JVM container runs"
is "$(docker inspect -f '{{.Config.User}}' "$fx")" "10001:10001" "fixture runs as 10001:10001"
hp=$(host_pid "$fx")
like "$(tr '\0' ' ' < /proc/$hp/cmdline)" '^/opt/java/openjdk/bin/java ' "JVM is PID 1 and lives at /opt/java/openjdk"
is "$(awk '/^Uid:/ {print $2}' /proc/$hp/status)" 10001 "JVM's uid is 10001"
check "no /etc/passwd and no shell in the image" bash -c "! docker cp $fx:/etc/passwd - >/dev/null 2>&1 && ! docker cp $fx:/bin/sh - >/dev/null 2>&1"

out=$TMP/out; mkdir -p "$out"
perf_bin=$(readlink -f "$(command -v perf)")
ro=()
for d in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu; do [ -d "$d" ] && [ ! -L "$d" ] && ro+=(-v "$d:$d:ro"); done
log=$(docker run --rm --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
    --pid "container:$fx" --network none --user 0:0 \
    --cap-drop ALL --cap-add SYS_ADMIN --cap-add SYS_PTRACE \
    -v "$perf_bin:/usr/bin/perf:ro" -v /usr/bin/sleep:/usr/bin/sleep:ro "${ro[@]}" -v "$out:/out" \
    --entrypoint /usr/bin/perf flame-fixture-jvm:latest \
    record -e cpu-clock -g -F 199 -p 1 -o /out/perf.data -- /usr/bin/sleep 2 2>&1)
rc=$?
is "$rc" 0 "perf record in a container sharing the JVM's PID namespace exits 0"
[ "$rc" = 0 ] || diag "$log"
n=$(perf script -i "$out/perf.data" -F comm,tid 2>/dev/null | grep -c 'worker-0')
check "perf recorded samples of the JVM's worker thread ($n)" test "${n:-0}" -gt 50
check "the fixture JVM is still running" test "$(docker inspect -f '{{.State.Running}}' "$fx")" = true
done_testing
