# Helpers for tests/e2e/hostile-*.t (source after lib.sh): the hostile fixture image, the
# sidecar run with the contract's HostConfig, timing and the sidecar's peak memory (VmHWM).
HIMG=flame-fixture-hostile:latest
J=/opt/java/openjdk/bin/java
JOPTS=(-XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app FlameFixture)
CAPS=(--cap-drop ALL --cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add SETUID --cap-add SETGID --cap-add SYS_CHROOT)
"$ROOT/tests/fixtures/hostile/build.sh" >/dev/null || bail "cannot build the hostile fixture image"
ensure_sidecar_image || bail "cannot import the sidecar image (run make)"
HWM_MAX=0

# hstart READY CMD...: start a hostile container, print its id once READY was logged (30 s).
hstart() {
    local ready=$1 id line; shift
    id=$(docker run -d --network none --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" "$HIMG" "$@") || return 1
    while read -r line; do
        case "$line" in *"$ready"*) echo "$id"; return 0 ;; esac
    done < <(timeout ${HTIMEOUT:-30} docker logs -f "$id" 2>&1)
    docker logs "$id" >&2; return 1
}
# hsidecar FX OUT ARGS...: run the sidecar against FX (stdout OUT, stderr OUT.err), bounded to
# 120 s; sets ELAPSED_MS and HWM_KB (the sidecar's VmHWM, polled from the host every 50 ms).
hsidecar() {
    local fx=$1 out=$2 name=hside-$$-$RANDOM; shift 2
    local t0; t0=$(date +%s%N)
    timeout 120 docker run --rm --name "$name" --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
        --pid "container:$fx" --network none --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m \
        "${CAPS[@]}" "$SIDECAR_IMAGE" /flame-sidecar record "$@" >"$out" 2>"$out.err" &
    local job=$! hp="" h hwm=0
    while kill -0 "$job" 2>/dev/null; do
        [ -z "$hp" ] && hp=$(docker inspect -f '{{.State.Pid}}' "$name" 2>/dev/null | grep -v '^0$')
        if [ -n "$hp" ]; then
            h=$(awk '/^VmHWM/ {print $2}' "/proc/$hp/status" 2>/dev/null)
            [ -n "$h" ] && [ "$h" -gt "$hwm" ] && hwm=$h
        fi
        sleep 0.05
    done
    wait "$job"; local rc=$?
    ELAPSED_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    HWM_KB=$hwm
    [ "$hwm" -gt "$HWM_MAX" ] && HWM_MAX=$hwm
    return $rc
}
# tsnap FX: the target's mountinfo and a listing of its /tmp (with link targets and sizes).
tsnap() {
    local hp; hp=$(target_pid "$1") || return 1
    cut -d' ' -f5,9,10 "/proc/$hp/mountinfo" | sort
    (cd "/proc/$hp/root/tmp" && find . -mindepth 1 -maxdepth 1 ! -name '.java_pid*' -printf '%p %y %s %l %U\n' | sort)
}
# sfield OUT KEY: a number from the S line.
sfield() { sed -n 's/^S //p' "$1" | grep -ao "\"$2\":[0-9.]*" | head -1 | cut -d: -f2; }
# common OUT DESC RC_WANT: the sidecar ended cleanly and within bounds.
common() {
    local out=$1 d=$2 rcw=$3 rc=$4
    is "$rc" "$rcw" "$d: sidecar exit status $rcw"
    if [ "$rcw" = 0 ]; then is "$(tail -1 "$out")" D "$d: stream ends with D"
    else like "$(tail -2 "$out" | head -1)" '^E ' "$d: an E line says why"; fi
    check "$d: finished within 30 s (${ELAPSED_MS} ms)" test "$ELAPSED_MS" -lt 30000
    check "$d: sidecar VmHWM bounded (${HWM_KB} kB < 400 MB)" test "$HWM_KB" -lt 409600
    unlike "$(cat "$out.err")" 'AddressSanitizer|Segmentation|core dumped|panic' "$d: no crash"
}
# untouched FX BEFORE DESC: the target's mounts and /tmp as before (planted things included),
# its main process alive, and no thread dump printed by the JVM (no stray SIGQUIT).
untouched() {
    local now; now=$(tsnap "$1")
    if [ "$now" = "$2" ]; then ok "$3: target's mountinfo and /tmp (planted entries too) as before"
    else nok "$3: target's mountinfo and /tmp (planted entries too) as before"; fdiag "$(diff <(echo "$2") <(echo "$now"))"; fi
    is "$(docker inspect -f '{{.State.Running}}' "$1")" true "$3: the target still runs"
    unlike "$(docker logs "$1" 2>&1)" 'Full thread dump|fakejava: signal|fatal error|hs_err' "$3: no thread dump, no signal, no JVM error in the target's output"
}
