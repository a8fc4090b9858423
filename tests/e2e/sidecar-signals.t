#!/usr/bin/env bash
# Stopping the sidecar (docs/PROTOCOL.md): SIGINT ends sampling early and still delivers the
# profile; SIGTERM aborts without a profile. Both leave the target as it was.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
ensure_fixture_image || bail "cannot build the fixture image"
[ -f "$BUILD/flame-sidecar.tar" ] || bail "build/flame-sidecar.tar missing: run make"
IMG=docker-flame-sidecar:e2e-sig-$$
docker import "$BUILD/flame-sidecar.tar" "$IMG" >/dev/null || bail "docker import failed"
trap '_cleanup; docker rmi -f "$IMG" >/dev/null 2>&1' EXIT
snapshot() { local hp; hp=$(target_pid "$1") || return 1; cut -d' ' -f5,9,10 "/proc/$hp/mountinfo" | sort; ls -A "/proc/$hp/root/tmp" | grep -v '^\.java_pid[0-9]*$' | sort; }

fx=$(fixture pid1) || bail "fixture pid1 did not start"
before=$(snapshot "$fx")
for sig in INT TERM; do
    name=flame-sidecar-sig-$sig-$$
    o=$TMP/$sig.out
    # --duration 0: until stopped. The signal is sent once the first P line shows recording runs.
    timeout 60 docker run --name "$name" --rm --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
        --pid "container:$fx" --network none --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m \
        --cap-drop ALL --cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add SETUID --cap-add SETGID --cap-add SYS_CHROOT \
        "$IMG" /flame-sidecar record --duration 0 2>"$o.err" |
        tee "$o" | { grep -q -m1 '^P ' && docker kill -s "$sig" "$name" >/dev/null; cat >/dev/null; }
    rc=${PIPESTATUS[0]}
    is "$(tail -1 "$o")" "D" "SIG$sig: the stream still ends with D"
    if [ "$sig" = INT ]; then
        is "$rc" 0 "SIGINT: exit status 0"
        like "$(grep '^S' "$o")" '"samples":[1-9]' "SIGINT: the samples gathered so far are delivered (S)"
        like "$(grep '^F' "$o")" 'FlameFixture\.countPrimes' "SIGINT: folded stacks are delivered"
    else
        is "$rc" 130 "SIGTERM: exit status 130"
        like "$(grep '^E' "$o")" '^E aborted ' "SIGTERM: E aborted, no profile"
        is "$(grep -c '^F' "$o")" 0 "SIGTERM: no F lines"
    fi
    now=$(snapshot "$fx")
    if [ "$now" = "$before" ]; then ok "SIG$sig: the target's mountinfo and /tmp are as before"
    else nok "SIG$sig: the target's mountinfo and /tmp are as before"; fdiag "$(diff <(echo "$before") <(echo "$now"))"; fi
    is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "SIG$sig: the JVM still runs"
done
done_testing
