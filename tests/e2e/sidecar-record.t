#!/usr/bin/env bash
# The sidecar image against real fixture JVMs: Java names incl. an inlined
# frame and a method first compiled mid-recording, >= 99% of JIT-leaf samples named, the
# variants, three runs in a row, the copy fallback, and that the target is left as it was.
# Runs `docker run` directly (no plugin) with the contract's HostConfig (docs/PROTOCOL.md).
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
ensure_fixture_image || bail "cannot build the fixture image"
[ -f "$BUILD/flame-sidecar.tar" ] || bail "build/flame-sidecar.tar missing: run make"
IMG=docker-flame-sidecar:e2e-$$
docker import "$BUILD/flame-sidecar.tar" "$IMG" >/dev/null || bail "docker import failed"
trap '_cleanup; docker rmi -f "$IMG" >/dev/null 2>&1' EXIT
CAPS=(--cap-drop ALL --cap-add SYS_ADMIN --cap-add SYS_PTRACE --cap-add SETUID --cap-add SETGID --cap-add SYS_CHROOT)

# sidecar FIXTURE OUTFILE ARGS...: run the sidecar against a fixture, stdout to OUTFILE.
sidecar() {
    local fx=$1 out=$2; shift 2
    timeout 120 docker run --rm --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
        --pid "container:$fx" --network none --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m \
        "${CAPS[@]}" "$IMG" /flame-sidecar record "$@" >"$out" 2>"$out.err"
}
# What must be identical before and after a run: mounts and /tmp of the target, JVM alive.
# /tmp/.java_pid<N> is the JVM's own attach socket: HotSpot creates it on the first attach and
# keeps it while it runs (we cannot and must not remove it); it is listed apart.
snapshot() { local hp; hp=$(target_pid "$1") || return 1; cut -d' ' -f5,9,10 "/proc/$hp/mountinfo" | sort; ls -A "/proc/$hp/root/tmp" | grep -v '^\.java_pid[0-9]*$' | sort; }
field() { sed -n 's/^S //p' "$1" | grep -o "\"$2\":[0-9.]*" | cut -d: -f2; }
# share OUT: the share of JIT-leaf samples named, the unnamed ones of the recording's first pass
# aside (no_floor on the recorder's stderr: samples taken before any unloaded-classes count was
# read keep only boot-loader names, by design; docs/SIDECAR.md "Code read too recently"), up to
# a tenth of the samples (measured: 1-5 samples, 10-50 ms; a floor never read must still fail).
# Empty when the recorder's line is missing.
share() {
    local n u e
    n=$(field "$1" jit_leaf_samples) u=$(($(field "$1" jit_leaf_samples) - $(field "$1" jit_leaf_named)))
    e=$(grep -ao 'recorder: interpreted: samples=[0-9]* no_floor=[0-9]*' "$1.err" | sed 's/.*no_floor=//')
    [ -n "$e" ] || return 0
    [ "$e" -gt "$u" ] && e=$u
    [ "$e" -gt $((n / 10)) ] && e=$((n / 10))
    awk -v n="$n" -v u="$u" -v e="$e" 'BEGIN { if (n > e) printf "%.4f\n", (n - u) / (n - e); else print 1 }'
}
share_ok() { awk -v s="$(share "$1")" 'BEGIN { exit !(s != "" && s >= 0.99) }'; }
shares() { echo "$(field "$1" named_share), first pass aside $(share "$1")"; }
restored() { # restored FIXTURE BEFORE DESC
    local now; now=$(snapshot "$1")
    if [ "$now" = "$2" ]; then ok "$3: the target's mountinfo and /tmp are as before"
    else nok "$3: the target's mountinfo and /tmp are as before"; fdiag "$(diff <(echo "$2") <(echo "$now"))"; fi
    is "$(docker inspect -f '{{.State.Running}}' "$1")" true "$3: the JVM still runs"
}

# --- pid1: the full check, lateBloomer triggered once the first P line arrives ---
fx=$(fixture pid1) || bail "fixture pid1 did not start"
before=$(snapshot "$fx")
o=$TMP/pid1.out
t0=$(date +%s%N)
timeout 120 docker run --rm --label docker-flame-test=1 --label docker-flame-test.owner="$FLAME_TEST_OWNER" \
    --pid "container:$fx" --network none --read-only --tmpfs /tmp:rw,nosuid,nodev,size=512m \
    "${CAPS[@]}" "$IMG" /flame-sidecar record --duration 10 2>"$o.err" |
    tee "$o" | { grep -q -m1 '^P ' && docker kill -s HUP "$fx" >/dev/null; cat >/dev/null; }
diag "pid1 run took $(( ($(date +%s%N) - t0) / 1000000 )) ms; $(grep '^S' "$o")"
is "$(tail -1 "$o")" "D" "pid1: stream ends with D"
like "$(grep '^J' "$o")" '"attach":"agent","inject":"mount"' "pid1: agent loaded through a mount injection"
like "$(grep '^F' "$o")" 'FlameFixture\.countPrimes' "pid1: FlameFixture.countPrimes is named"
like "$(grep '^F' "$o")" 'FlameFixture\.isPrime_\[i\]' "pid1: the inlined isPrime frame is shown (_[i])"
like "$(grep '^F' "$o")" 'FlameFixture\.lateBloomer' "pid1: lateBloomer, first compiled during the recording, is named"
check "pid1: >= 99% of JIT-leaf samples named ($(shares "$o"))" share_ok "$o"
like "$(grep '^S' "$o")" '"process":"0000000000000000"' "pid1: no capability left while processing"
restored "$fx" "$before" "pid1"
docker logs "$fx" 2>&1 | grep -Ei 'error|exception|fatal' >"$TMP/jvmerr" && { nok "pid1: JVM output shows no errors"; fdiag "$(cat "$TMP/jvmerr")"; } || ok "pid1: JVM output shows no errors"

# --- the same JVM twice more ---
for run in 2 3; do
    sidecar "$fx" "$TMP/run$run.out" --duration 2
    is "$(tail -1 "$TMP/run$run.out")" "D" "run $run on the same JVM: stream ends with D"
    like "$(grep '^F' "$TMP/run$run.out")" 'FlameFixture\.countPrimes' "run $run: countPrimes named"
    check "run $run: >= 99% of JIT-leaf samples named ($(shares "$TMP/run$run.out"))" share_ok "$TMP/run$run.out"
    restored "$fx" "$before" "run $run"
done

# Copies of the agent the JVM maps (its executable segment; a detached mount shows the file at
# /libflameagent.so, a deleted copy with " (deleted)"). A JVM cannot unload an agent: every
# profile that loaded a new copy would add mappings and a JVMTI environment for good.
agent_copies() { grep -cE ' r-xp .*/libflameagent\.so( \(deleted\))?$' "/proc/$(target_pid "$1")/maps"; }
is "$(agent_copies "$fx")" 1 "three profiles of one JVM: it maps one copy of the agent (the stable path re-arms it)"

# --- the copy fallback, forced ---
sidecar "$fx" "$TMP/copy.out" --duration 2 --inject copy
like "$(grep '^J' "$TMP/copy.out")" '"attach":"agent","inject":"copy"' "inject=copy: agent loaded from a copy"
like "$(grep '^F' "$TMP/copy.out")" 'FlameFixture\.countPrimes' "inject=copy: countPrimes named"
restored "$fx" "$before" "inject=copy"
is "$(agent_copies "$fx")" 1 "inject=copy: the same path, the copy loaded before is re-armed"

# --- hostile: the stable name taken by a directory the target made (its own uid) ---
stable=.docker-flame-$(agent_stable_tag)
planted=/proc/$(target_pid "$fx")/root/tmp/$stable
mkdir "$planted" && touch "$planted/keep" && chown -R 10001:10001 "$planted"
okif $? "planted a directory at the agent's stable name /tmp/$stable"
before_p=$(snapshot "$fx")
sidecar "$fx" "$TMP/taken.out" --duration 2
like "$(grep '^J' "$TMP/taken.out")" '"attach":"agent","inject":"mount"' "stable name taken: agent mounted under a random name instead"
like "$(grep '^F' "$TMP/taken.out")" 'FlameFixture\.countPrimes' "stable name taken: countPrimes named"
restored "$fx" "$before_p" "stable name taken"
check "stable name taken: the target's directory and its file are left as they were" test -f "$planted/keep"
is "$(agent_copies "$fx")" 2 "stable name taken: one more copy of the agent, as a first profile loads"
rm -rf "$planted"

# --- two profilers of one JVM at the same time (a recording and a one-shot profile): each agent
# copy has its own map, so the one that ends first neither truncates nor deletes the other's.
# Before: the longer profile lost every Java name ("0% of 1569 JIT samples have Java names"). ---
before_c=$(snapshot "$fx")
sidecar "$fx" "$TMP/longer.out" --duration 8 &
lpid=$!
has_p() { grep -q '^P ' "$TMP/longer.out" 2>/dev/null; }
wait_until 60 has_p || nok "the longer profile started recording"
sidecar "$fx" "$TMP/shorter.out" --duration 1
wait "$lpid"
like "$(grep '^J' "$TMP/shorter.out")" '"attach":"agent"' "at the same time: the shorter profile has its own agent"
check "at the same time: the shorter profile names >= 99% of its JIT-leaf samples ($(shares "$TMP/shorter.out"))" share_ok "$TMP/shorter.out"
check "at the same time: the longer one, which outlived it, too ($(shares "$TMP/longer.out"))" share_ok "$TMP/longer.out"
unlike "$(grep '^W' "$TMP/longer.out" "$TMP/shorter.out")" 'perf-[0-9]' "at the same time: no warning about a map"
restored "$fx" "$before_c" "at the same time"

sidecar "$fx" "$TMP/two-copies.out" --duration 1
like "$(grep '^F' "$TMP/two-copies.out")" 'FlameFixture\.countPrimes' "two agent copies mapped: countPrimes named"
unlike "$(grep '^W' "$TMP/two-copies.out")" 'libflameagent' "two agent copies mapped: no warning about our own agent's files"
docker rm -f "$fx" >/dev/null

# --- variants ---
fx=$(fixture notpid1) || bail "fixture notpid1 did not start"
before=$(snapshot "$fx")
sidecar "$fx" "$TMP/notpid1.out" --duration 2
like "$(grep '^J' "$TMP/notpid1.out")" '"pid":[0-9]+' "notpid1: JVM found"
unlike "$(grep '^J' "$TMP/notpid1.out")" '"pid":1,' "notpid1: the JVM is not pid 1"
like "$(grep '^F' "$TMP/notpid1.out")" 'FlameFixture\.countPrimes' "notpid1: countPrimes named"
restored "$fx" "$before" "notpid1"
docker rm -f "$fx" >/dev/null

fx=$(fixture two) || bail "fixture two did not start"
before=$(snapshot "$fx")
sidecar "$fx" "$TMP/two.out" --duration 3
is "$(grep -c '^J' "$TMP/two.out")" 2 "two: both JVMs found"
roots=$(grep '^F' "$TMP/two.out" | sed 's/^F //; s/;.*//' | sort -u | grep -c '^java-[0-9]* FlameFixture$')
is "$roots" 2 "two: stacks rooted by two distinct JVM frames"
restored "$fx" "$before" "two"
one=$(sed -n 's/^J .*"pid":\([0-9]*\),.*/\1/p' "$TMP/two.out" | tail -1)
sidecar "$fx" "$TMP/two-pid.out" --duration 1 --pid "$one"
is "$(grep -c '^J' "$TMP/two-pid.out")" 1 "two + --pid $one: only that JVM"
like "$(grep '^J' "$TMP/two-pid.out")" "\"pid\":$one," "two + --pid: the one asked for"
sidecar "$fx" "$TMP/two-nopid.out" --duration 1 --pid 99999
like "$(grep '^E' "$TMP/two-nopid.out")" '^E no_pid ' "--pid of no JVM: E no_pid"
docker rm -f "$fx" >/dev/null

fx=$(fixture readonly) || bail "fixture readonly did not start"
before=$(snapshot "$fx")
sidecar "$fx" "$TMP/ro.out" --duration 2
like "$(grep '^J' "$TMP/ro.out")" '"attach":"agent","inject":"mount"' "readonly: a mount is not noexec: agent loaded"
like "$(grep '^F' "$TMP/ro.out")" 'FlameFixture\.countPrimes' "readonly: countPrimes named"
restored "$fx" "$before" "readonly"
sidecar "$fx" "$TMP/rocopy.out" --duration 2 --inject copy
like "$(grep '^W' "$TMP/rocopy.out")" 'noexec' "readonly + copy: says the copy cannot work on a noexec /tmp"
like "$(grep '^J' "$TMP/rocopy.out")" '"attach":"perfmap"' "readonly + copy: falls back to Compiler.perfmap"
like "$(grep '^F' "$TMP/rocopy.out")" 'FlameFixture\.countPrimes' "readonly + copy: still named via Compiler.perfmap"
restored "$fx" "$before" "readonly + copy"
docker rm -f "$fx" >/dev/null

fx=$(fixture nofp) || bail "fixture nofp did not start"
sidecar "$fx" "$TMP/nofp.out" --duration 1
# its stacks are walked by the recorder (docs/SIDECAR.md "Stack walking"): no warning about the
# flag, and the S line counts the walks
unlike "$(grep '^W' "$TMP/nofp.out")" 'PreserveFramePointer' "nofp: no W line about PreserveFramePointer (the stacks are walked)"
like "$(grep '^S' "$TMP/nofp.out")" '"walk":\{"walks":[1-9]' "nofp: S counts the walks"
like "$(grep '^J' "$TMP/nofp.out")" '"preserve_frame_pointer":false' "nofp: J says preserve_frame_pointer false"
docker rm -f "$fx" >/dev/null

fx=$(fixture noattach) || bail "fixture noattach did not start"
before=$(snapshot "$fx")
sidecar "$fx" "$TMP/noattach.out" --duration 1
like "$(grep '^W' "$TMP/noattach.out")" 'DisableAttachMechanism' "noattach: says why Java names are missing"
is "$(tail -1 "$TMP/noattach.out")" "D" "noattach: profiled anyway"
restored "$fx" "$before" "noattach"
docker rm -f "$fx" >/dev/null

fx=$(fixture nojvm) || bail "fixture nojvm did not start"
sidecar "$fx" "$TMP/nojvm.out" --duration 1; rc=$?
like "$(grep '^E' "$TMP/nojvm.out")" '^E no_jvm .*1 init' "nojvm: E no_jvm listing the processes seen"
is "$rc" 4 "nojvm: exit status 4"
docker rm -f "$fx" >/dev/null
done_testing
