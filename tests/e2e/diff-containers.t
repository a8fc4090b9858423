#!/usr/bin/env bash
# docker flame diff on two running containers: the fixture's two versions of the workload
# (`pid1`, and `slow` where FlameFixture.countPrimes does 2x the work) are profiled at the same
# time; the movers summary must name prime counting as grown (isPrime, whose self time runs
# inlined into countPrimes: one line per method), both SVGs must be written and read
# back as differential profiles. Then a container against a file, a docker-flame SVG against a
# container, and merge of two containers.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
ensure_fixture_image || bail "cannot build the fixture image"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame is not built (make)"
ensure_sidecar_image || bail "no sidecar image (build/flame-sidecar.tar missing?)"
plugin_env
# every run is bounded: a hung profile fails this test instead of the whole suite
T=${FLAME_E2E_TIMEOUT:-180}
# grew_or_noise OUT DESC [METHODS]: prime counting (METHODS, an ERE of names: isPrime or
# countPrimes by default) is listed as grown; on a busy machine a few-second profile may hold too
# few samples to tell, so a line of it elsewhere in the table passes when its change is within
# its noise column (never a significant shrink)
grew_or_noise() {
    local grew line m=${3:-isPrime|countPrimes}
    grew=$(printf '%s\n' "$1" | sed -n '/grew most:/,/shrank most:/p')
    if printf '%s\n' "$grew" | grep -Eq "^    FlameFixture\\.($m) "; then ok "$2"; return; fi
    line=$(printf '%s\n' "$1" | grep -E "^    FlameFixture\\.($m) " | head -1)
    if [ -n "$line" ] && printf '%s\n' "$line" | awk '{d = $(NF - 1); n = $NF; sub(/±/, "", n); n += 0; d += 0; if (d < 0) d = -d; exit !(d <= n)}'; then
        ok "$2 (too few samples to tell: $(printf '%s' "$line" | tr -s ' '))"
    else
        nok "$2"; fdiag "$1"
    fi
}

a=$(fixture pid1) || bail "fixture pid1 did not start"
b=$(fixture slow) || bail "fixture slow did not start"
is "$(docker inspect -f '{{.State.Running}}' "$a" "$b" | tr '\n' ' ')" "true true " "fixtures pid1 and slow run"

# 1. container vs container, self movers
start=$(date +%s)
out=$(timeout -k 30 "$T" docker flame diff "$a" "$b" -d 5 -o "$TMP/d.svg" 2>"$TMP/d.err")
rc=$?
took=$(($(date +%s) - start))
is "$rc" 0 "diff of two containers exits 0"
[ "$rc" = 0 ] || diag "$(tail -5 "$TMP/d.err")"
check "diff.svg written" test -s "$TMP/d.svg"
check "mirror written" test -s "$TMP/d.mirror.svg"
diag "two containers, -d 5: ${took}s (one profiler call for both; see test_diff.c)"
grew_or_noise "$out" "summary names prime counting (isPrime) as grown"
like "$(docker flame render --format folded "$TMP/d.svg" 2>&1 | head -1)" '^.+ [0-9.]+ [0-9.]+$' \
    "diff.svg carries a two-column profile"

# 2. inclusive movers: countPrimes (with its inlined isPrime) grows in total share
out=$(timeout -k 30 "$T" docker flame diff --inclusive --single "$a" "$b" -d 3 -o "$TMP/i.svg" 2>"$TMP/i.err")
grew_or_noise "$out" "--inclusive: countPrimes grew" countPrimes

# 3. a container against a file (the merged profile of the two fixtures)
timeout -k 30 "$T" docker flame merge "$a" "$b" -d 3 -o "$TMP/m.folded" 2>"$TMP/m.err"
is "$?" 0 "merge of two containers exits 0"
check "merged folded written" test -s "$TMP/m.folded"
timeout -k 30 "$T" docker flame diff "$TMP/m.folded" "$b" -d 3 --single -o "$TMP/f.svg" >/dev/null 2>"$TMP/f.err"
is "$?" 0 "diff of a file against a container exits 0"
[ -s "$TMP/f.svg" ] || diag "$(cat "$TMP/f.err")"

# 3b. an SVG written by `docker flame` (read back from the data it embeds) against a container
timeout -k 30 "$T" docker flame "$a" -d 3 -q -o "$TMP/a.svg" 2>"$TMP/a.err"
is "$?" 0 "profile of pid1 written as an SVG"
out=$(timeout -k 30 "$T" docker flame diff "$TMP/a.svg" "$b" -d 3 --single -o "$TMP/s.svg" 2>"$TMP/s.err")
is "$?" 0 "diff of a docker-flame SVG against a container exits 0"
[ -s "$TMP/s.svg" ] || diag "$(cat "$TMP/s.err")"
grew_or_noise "$out" "SVG against container: prime counting grew"
like "$out" "^$TMP/a.svg -> $b " "SVG against container: summary names both sides"

# 4. neither a file nor a container
timeout -k 30 "$T" docker flame diff "$TMP/d.svg" no-such-container-$$ -o "$TMP/x.svg" 2>"$TMP/x.err"
is "$?" 1 "unknown input exits 1"
like "$(cat "$TMP/x.err")" "no such file or running container: no-such-container-$$" "names the bad input"
check "targets still running" test "$(docker inspect -f '{{.State.Running}}' "$a" "$b" | sort -u)" = true
done_testing
