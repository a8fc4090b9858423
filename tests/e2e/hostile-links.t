#!/usr/bin/env bash
# Hostile target: links and special files planted at the names the sidecar and the agent
# use inside the container (/tmp/.attach_pid<N>, /tmp/perf-<N>.map) before the JVM starts
# (tests/fixtures/hostile: `hostile plant ... -- java`). Required: nothing written or read through
# them, planted entries left as they were, no SIGQUIT when the trigger is not ours (no thread
# dump), a W line naming what was refused, still a profile (native frames), bounded time/memory.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
. "$(dirname "$0")/hostile-lib.sh"

# run_case NAME "PLANT SPECS" W-REGEX
run_case() {
    local name=$1 specs=$2 wre=$3 fx before o rc
    # shellcheck disable=SC2086
    fx=$(hstart "FlameFixture ready" /hostile plant $specs -- "$J" "${JOPTS[@]}") || { nok "$name: fixture started"; return; }
    before=$(tsnap "$fx")
    o=$TMP/$name.out
    hsidecar "$fx" "$o" --duration 2 --attach-timeout 3; rc=$?
    diag "$name: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB; $(grep -a '^W' "$o" | cut -c1-200)"
    common "$o" "$name" 0 "$rc"
    like "$(grep -a '^W' "$o")" "$wre" "$name: a W line says what was refused"
    unlike "$(grep -a '^W' "$o")" 'using Compiler.perfmap instead' "$name: no Compiler.perfmap announced (it would write through the link)"
    check "$name: still a profile (F lines)" grep -aq '^F ' "$o"
    untouched "$fx" "$before" "$name"
    unlike "$(cat "$o" "$o.err")" 'SECRET-HASH|VICTIM|JAVA_HOME=' "$name: nothing read through the link reached the output"
    local hp; hp=$(host_pid "$fx")
    is "$(cat "/proc/$hp/root/app/secret" 2>/dev/null)" "root:SECRET-HASH-DO-NOT-READ:19000:0:99999:7:::" "$name: /app/secret unchanged"
    [ -e "/proc/$hp/root/tmp/victim" ] && is "$(cat "/proc/$hp/root/tmp/victim")" "VICTIM" "$name: the JVM user's /tmp/victim unchanged"
    docker rm -f "$fx" >/dev/null
}

# 1. the attach trigger
run_case attach-to-sidecar 'symlink:/flame-sidecar:/tmp/.attach_pid%p' 'attach_pid1 in the target is not ours.*no SIGQUIT sent'
run_case attach-to-secret 'symlink:/app/secret:/tmp/.attach_pid%p' 'attach_pid1 in the target is not ours.*no SIGQUIT sent'
run_case attach-to-victim 'file:/tmp/victim:VICTIM symlink:/tmp/victim:/tmp/.attach_pid%p' 'attach_pid1 in the target is not ours'
run_case attach-fifo 'fifo:/tmp/.attach_pid%p' 'attach_pid1 in the target is not ours'
# 2. the perf map, at both of its names: the agent's own, perf-<pid>.<tag>.map (the tag of its
# stable directory is predictable: agent_stable_tag), which the agent refuses to open
# (O_NOFOLLOW|O_NONBLOCK); and HotSpot's perf-<pid>.map, which Compiler.perfmap would write
# through, so it must not be asked to.
tag=$(agent_stable_tag)
[ "${#tag}" = 16 ] || bail "cannot compute the agent's stable tag"
both() { echo "$1:/tmp/perf-%p.map $1:/tmp/perf-%p.$tag.map"; }
run_case map-to-secret "$(both symlink:/app/secret)" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused, no Compiler.perfmap'
run_case map-to-environ "$(both symlink:/proc/self/environ)" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused'
run_case map-to-victim "file:/tmp/victim:VICTIM $(both symlink:/tmp/victim)" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused'
run_case map-to-sidecar "$(both symlink:/flame-sidecar)" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused'
run_case map-to-sparse-2G "sparse:/tmp/big:2147483648 $(both symlink:/tmp/big)" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused'
run_case map-fifo "fifo:/tmp/perf-%p.map fifo:/tmp/perf-%p.$tag.map" 'perf-1.map in the target is a symlink, FIFO or foreign file planted there: refused'
# Only at HotSpot's name: the agent, with a map of its own, is not disturbed (and touches nothing).
fx=$(hstart "FlameFixture ready" /hostile plant 'symlink:/app/secret:/tmp/perf-%p.map' -- "$J" "${JOPTS[@]}") || bail "hotspot-name fixture"
before=$(tsnap "$fx")
o=$TMP/hsname.out
hsidecar "$fx" "$o" --duration 2 --attach-timeout 3; rc=$?
common "$o" map-hotspot-name 0 "$rc"
like "$(grep -a '^F' "$o")" 'FlameFixture\.' "map-hotspot-name: Java frames named by the agent's own map"
unlike "$(grep -a '^W' "$o")" 'perf-' "map-hotspot-name: no warning about a map"
untouched "$fx" "$before" map-hotspot-name
docker rm -f "$fx" >/dev/null

# 2 GB sparse regular file of the JVM user at the agent's map name: the agent takes it over
# (O_TRUNC, it is the JVM user's own file at the agent's own name) and the profile is named.
fx=$(hstart "FlameFixture ready" /hostile plant "sparse:/tmp/perf-%p.$tag.map:2147483648" -- "$J" "${JOPTS[@]}") || bail "sparse fixture"
o=$TMP/sparse.out
hsidecar "$fx" "$o" --duration 2 --attach-timeout 3; rc=$?
diag "map-sparse-2G: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB"
common "$o" map-sparse-2G 0 "$rc"
like "$(grep -a '^F' "$o")" 'FlameFixture\.' "map-sparse-2G: Java frames named (the agent truncated the planted file)"
is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "map-sparse-2G: the JVM still runs"
docker rm -f "$fx" >/dev/null
done_testing
