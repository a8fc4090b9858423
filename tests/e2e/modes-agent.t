#!/usr/bin/env bash
# --mode alloc and --mode lock (docs/MODES.md) through the real plugin, sidecar and agent, against
# the `modes` fixture (java/ModesFixture.java), whose answers are known by construction:
# - alloc: ModesFixture.smallSite allocates long[6] (64 B) and ModesFixture.largeSite byte[4080]
#   (4 KiB), 3:1 in bytes: the profile's leaves are those classes under those methods, their bytes
#   3:1 within 10 %, and they are nearly all the bytes of the profile;
# - lock: three threads take turns holding one ModesFixture$Monitor 2 ms each, so two of them
#   wait at any time: the monitor's class is the leaf under ModesFixture.contend (the waiting
#   method) with nearly all the delay, which is ~2 x the recording's length; the monitor that
#   only one thread enters (ModesFixture$Solo) is absent;
# - one file per mode, the mode in its name; titles and tooltips in bytes and ns; pprof with
#   alloc_objects/alloc_space and contentions/delay as go tool pprof reads them;
# - an unknown mode, two modes in one `top`, and a diff of an alloc profile with a CPU one
#   are refused in one line, exit 2; the JVM lives on, its /tmp as before; Temurin 25 too.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"
real_plugin_setup
T="timeout -k 10 180"
D=8 # seconds recorded

# What must be the same after a profile: the target's /tmp (but the JVM's own attach socket).
tmp_of() { local hp; hp=$(target_pid "$1") || return 1; ls -A "/proc/$hp/root/tmp" | grep -v '^\.java_pid[0-9]*$' | sort; }

profile_checks() { # LABEL IMAGE
    local label=$1 image=$2 fx out
    fx=$(FLAME_FIXTURE_IMAGE=$image fixture modes) || { nok "$label: fixture modes did not start"; return; }
    local before; before=$(tmp_of "$fx")
    mkdir -p "$TMP/$label"
    out=$TMP/$label
    $T docker flame -d $D --mode cpu,alloc,lock --format svg,folded,pprof -o "$out/" "$fx" 2>"$out/err"; local rc=$?
    is "$rc" 0 "$label: --mode cpu,alloc,lock: exit 0"
    [ "$rc" = 0 ] || { fdiag "$(tail -5 "$out/err")"; docker rm -f "$fx" >/dev/null; return; }
    local a l c
    a=$(ls "$out"/*.alloc.folded 2>/dev/null); l=$(ls "$out"/*.lock.folded 2>/dev/null); c=$(ls "$out"/*.cpu.folded 2>/dev/null)
    check "$label: one folded file per mode, named by it (cpu, alloc, lock)" test -s "$a" -a -s "$l" -a -s "$c"
    check "$label: an SVG and a pprof per mode too" test "$(ls "$out"/*.svg "$out"/*.pb.gz | wc -l)" = 6

    # ---- alloc ----
    local small large all
    small=$(sum "$a" 'ModesFixture\.smallSite;long\[\]_\[a\]$')
    large=$(sum "$a" 'ModesFixture\.largeSite;byte\[\]_\[a\]$')
    all=$(sum "$a")
    diag "$label: alloc: smallSite long[] $small B, largeSite byte[] $large B, all $all B"
    check "$label: alloc: long[] under smallSite : byte[] under largeSite = 3:1 +-10 % ($small / $large)" \
        within "$small" "$large" 2.7 3.3
    check "$label: alloc: the two sites are >= 90 % of the bytes" within "$((small + large))" "$all" 0.9 1.01
    like "$(grep -c '^alloc;' "$a")" '^[1-9]' "$label: alloc: stacks start at the thread (alloc)"
    like "$(grep -o 'allocations ([a-z]*)' "$out"/*.alloc.svg | head -1)" 'allocations \(bytes\)' "$label: alloc SVG: the title says bytes"
    like "$(grep -o '([0-9,]* bytes, [0-9.]*%)' "$out"/*.alloc.svg | head -1)" 'bytes' "$label: alloc SVG: tooltips in bytes"
    like "$(head -c 2048 "$out"/*.alloc.svg)" 'profile-type: alloc' "$label: alloc SVG: carries its type"
    like "$(grep -A1 'top classes allocated' "$out/err")" ' 7[0-9]\.[0-9]%  long\[\]$' \
        "$label: the summary's top class allocated: long[], ~75 % of the bytes"

    # ---- lock ----
    local mon solo total
    mon=$(sum "$l" 'ModesFixture\.contend;ModesFixture\$Monitor_\[l\]$')
    total=$(sum "$l")
    solo=$(grep -c 'Solo' "$l")
    diag "$label: lock: Monitor under contend $mon ns of $total ns; recorded $D s"
    check "$label: lock: the contended monitor's class under the waiting method has >= 90 % of the delay" \
        within "$mon" "$total" 0.9 1.01
    # two of the three threads wait at any time: ~2 x D s of delay (the agent runs about D s;
    # bounds wide enough for a loaded machine, where holders overrun their 2 ms)
    check "$label: lock: total delay ~2 x $D s (1.2x .. 2.8x)" within "$total" "$((D * 1000000000))" 1.2 2.8
    is "$solo" 0 "$label: lock: the uncontended monitor (ModesFixture\$Solo) is absent"
    like "$(grep -o 'lock contention ([a-z]*)' "$out"/*.lock.svg | head -1)" 'lock contention \(ns\)' "$label: lock SVG: the title says ns"

    # ---- pprof, as go tool pprof reads it ----
    if have_go; then
        go_env
        local st
        st=$(go tool pprof -raw "$out"/*.alloc.pb.gz 2>&1 | sed -n '/^Samples:/,/^ *[0-9]/p' | head -3)
        like "$st" 'alloc_objects/count alloc_space/bytes' "$label: pprof alloc: sample types alloc_objects/count alloc_space/bytes"
        st=$(go tool pprof -raw "$out"/*.lock.pb.gz 2>&1 | sed -n '/^Samples:/,/^ *[0-9]/p' | head -3)
        like "$st" 'contentions/count delay/nanoseconds' "$label: pprof lock: sample types contentions/count delay/nanoseconds"
        local top
        top=$(go tool pprof -sample_index=alloc_space -top "$out"/*.alloc.pb.gz 2>/dev/null | grep -m1 'long\[\]_\[a\]')
        like "$top" 'long' "$label: go tool pprof -sample_index=alloc_space: long[] at the top"
    else
        nok "$label: go tool pprof is missing (install.sh --test-deps installs golang-go)"
    fi

    # ---- the JVM afterwards ----
    is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "$label: the JVM still runs"
    is "$(tmp_of "$fx")" "$before" "$label: the target's /tmp is as before (no map, no samples file)"
    # the capability went back: a second alloc profile of the same JVM works
    $T docker flame -q -d 2 --mode alloc -o "$out/second.folded" "$fx" 2>"$out/err2"; rc=$?
    is "$rc" 0 "$label: a second --mode alloc profile of the same JVM: exit 0"
    [ "$rc" = 0 ] || fdiag "$(tail -5 "$out/err2")"
    like "$(ls "$out")" 'second\.alloc\.folded' "$label: -o second.folded --mode alloc: second.alloc.folded"
    docker rm -f "$fx" >/dev/null
}

profile_checks jdk17 flame-fixture-jvm:latest
if jdk25_fixture_image; then
    profile_checks temurin25 "$IMAGE25"
fi

# ---- refusals, before any sidecar ----
out=$($T docker flame --mode heap web 2>&1); rc=$?
is "$rc" 2 "--mode heap: exit 2"
like "$out" 'unknown value "heap"' "--mode heap: says the mode is unknown"
is "$(printf '%s\n' "$out" | wc -l)" 1 "--mode heap: one line"
out=$($T docker flame --alloc-interval 4096 web 2>&1); rc=$?
is "$rc" 2 "--alloc-interval without --mode alloc: exit 2"
like "$out" '^docker flame: --alloc-interval goes with --mode alloc' "--alloc-interval without --mode alloc: says so"
out=$($T docker flame --mode alloc --alloc-interval 100 web 2>&1); rc=$?
is "$rc" 2 "--alloc-interval 100: exit 2 (at least 1024)"
out=$($T docker flame top --mode alloc,lock web 2>&1); rc=$?
is "$rc" 2 "top --mode alloc,lock: exit 2"
like "$out" 'one of cpu, wall, offcpu, alloc and lock at a time' "top --mode alloc,lock: says top shows one"
printf 'main;A.f;byte[]_[a] 524288\n' >"$TMP/x.alloc.folded"
printf 'main;A.f 5\n' >"$TMP/y.folded"
out=$($T docker flame diff "$TMP/x.alloc.folded" "$TMP/y.folded" 2>&1); rc=$?
is "$rc" 2 "diff of an alloc and a cpu profile: exit 2"
like "$out" 'profile of alloc \(bytes\) but .* of cpu \(samples\)' "diff: says which types"
out=$($T docker flame merge -o "$TMP/m.folded" "$TMP/x.alloc.folded" "$TMP/y.folded" 2>&1); rc=$?
is "$rc" 2 "merge of an alloc and a cpu profile: exit 2"
no_sidecar_left
done_testing
