#!/usr/bin/env bash
# The agent inside a fixture container, without the sidecar: the library is bind-mounted
# read-only (as mount injection leaves it), the host's jcmd loads it into the container's JVM
# (uid 10001, no shell). Checks the map's name (the pid as the JVM sees itself: perf-1.map),
# its owner (the JVM's user) and mode, content, stop, and the JVM's log. Also on the read-only
# rootfs variant whose /tmp is a noexec tmpfs.
. "$(dirname "$0")/lib.sh"
SO=$BUILD/libflameagent.so
[ -f "$SO" ] || make -C "$ROOT" -s build/libflameagent.so >&2 || bail "cannot build $SO"
if ! engine_up; then
    skip_or_fail "no Docker engine"
    done_testing
fi
command -v jcmd >/dev/null || bail "need jcmd on PATH"
ensure_fixture_image || bail "cannot build the fixture image"
mkdir -p "$TMP/agent"
cp "$SO" "$TMP/agent/"

# Wait (bounded) until the container's log contains $2.
wait_log() {
    local deadline=$((SECONDS + ${3:-30}))
    until docker logs "$1" 2>&1 | grep -qF -- "$2"; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.2
    done
}
# Wait (bounded) until file $1 contains $2.
poll_grep() {
    local deadline=$((SECONDS + $3))
    until grep -qF -- "$2" "$1" 2>/dev/null; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}
valid_map() { python3 "$ROOT/tests/agent/check_map.py" "$1" | sed 's/^/# /'; [ "${PIPESTATUS[0]}" = 0 ]; }
# jcmd from the host finds the JVM through /proc/<pid>/root and its NSpid.
agent_load() { timeout 30 jcmd "$1" JVMTI.agent_load /flame-agent/libflameagent.so "\"$2\"" 2>&1; }

for variant in plain readonly; do
    extra=()
    [ "$variant" = readonly ] && extra=(--read-only --tmpfs /tmp:rw,noexec,nosuid,nodev,size=64m,mode=1777)
    id=$(docker run -d --network none --label docker-flame-test=1 \
        --label docker-flame-test.owner="$FLAME_TEST_OWNER" "${extra[@]}" \
        -v "$TMP/agent:/flame-agent:ro" flame-fixture-jvm:latest \
        /opt/java/openjdk/bin/java -XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app FlameFixture)
    if ! wait_log "$id" "FlameFixture ready" 30; then
        nok "$variant: fixture container ready"
        continue
    fi
    hp=$(host_pid "$id")
    map=/proc/$hp/root/tmp/perf-1.map
    like "$(agent_load "$hp" start)" 'return code: 0' "$variant: start through jcmd returns 0"
    check "$variant: map is /tmp/perf-1.map inside the container (the JVM's own pid)" test -f "$map"
    is "$(stat -c '%u %a' "$map")" "10001 644" "$variant: map owned by the JVM's user, mode 644"
    check "$variant: inlined countPrimes->isPrime in the map" \
        poll_grep "$map" ' FlameFixture.countPrimes->FlameFixture.isPrime' 30
    check "$variant: Interpreter in the map" grep -qF ' Interpreter' "$map"
    check "$variant: map valid" valid_map "$map"
    like "$(agent_load "$hp" stop)" 'return code: 0' "$variant: stop returns 0"
    unlike "$(ls -l "/proc/$hp/fd")" 'perf-1.map' "$variant: map closed after stop"
    like "$(agent_load "$hp" start,dir=/flame-agent)" 'return code: 2' \
        "$variant: dir on the read-only agent mount: return code 2"
    logs=$(docker logs "$id" 2>&1)
    like "$logs" 'docker-flame agent: cannot create /flame-agent/perf-1.map: Read-only file system' \
        "$variant: the failure is one line in the JVM's log"
    unlike "$(printf '%s\n' "$logs" | grep -v -e '^FlameFixture ready' -e '^docker-flame agent: cannot create')" . \
        "$variant: nothing else in the JVM's log"
    is "$(docker inspect -f '{{.State.Running}}' "$id")" true "$variant: JVM still running"
    docker rm -f "$id" >/dev/null
done
done_testing
