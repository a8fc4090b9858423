#!/usr/bin/env bash
# Issue 13's "done when": `docker flame diff` of two stored ranges names the method that changed.
# A real fixture JVM is recorded by `docker flame record` into a temporary SQLite store; mid-
# recording it is told (SIGUSR2, through `docker kill`) to replace its hot method countPrimes by
# sortNumbers; the diff of the range before against the range after names sortNumbers as the
# grower and countPrimes as shrinking. Waits are on events: windows in the store (read back with
# `docker flame show`/`ls`), the fixture's own "switched" line.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
DB=$TMP/rec.db
iso() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
windows() { docker flame ls --store "$DB" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
# samples of frames matching $3 stored from $1 to $2 (unix ms; "" = now), 0 when nothing is
samples_of() {
    docker flame show "$fx" --since "$(iso "$1")" ${2:+--until "$(iso "$2")"} --store "$DB" \
        --format folded -o - 2>/dev/null |
        awk -v re="$3" '$0 ~ re { n += $NF } END { print n + 0 }'
}
# from $1 on, the store holds at least $3 samples of frames $2 (a window: up to 98, 49 Hz x 2 s)
holds() { [ "$(samples_of "$1" "" "$2")" -ge "$3" ]; }

t0=$(now_ms)
timeout -k 10 300 docker flame record "$fx" --window 2s --store "$DB" >out 2>err &
pid=$!
# before: countPrimes (and the isPrime C2 inlines into it) in at least three windows' worth
if wait_for 180 holds "$t0" 'FlameFixture\.(countPrimes|isPrime)' 150; then
    ok "windows with the first hot method are stored"
else
    nok "windows with the first hot method are stored"; fdiag "$(cat err)"
fi
check "the store lists the container's windows ($(windows))" test "$(windows)" -ge 2
t1=$(now_ms)
docker kill -s USR2 "$fx" >/dev/null
okif $? "SIGUSR2 sent to the fixture"
switched() { docker logs "$fx" 2>&1 | grep -q 'FlameFixture switched to sortNumbers'; }
wait_for 60 switched && ok "the fixture switched its hot method" || nok "the fixture switched its hot method"
t2=$(now_ms)
if wait_for 180 holds "$t2" 'FlameFixture\.sortNumbers' 150; then
    ok "windows with the new hot method are stored"
else
    nok "windows with the new hot method are stored"; fdiag "$(cat err)"
fi
t3=$(now_ms)
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "the recording ends with Ctrl-C: exit 0"
# "before" ends a window (2 s) ahead of the signal: a range takes every window that overlaps it
t1=$((t1 - 2000))
is "$(samples_of "$t0" "$t1" 'FlameFixture\.sortNumbers')" 0 \
    "the range before the signal has no sortNumbers"

before="$fx@$(iso "$t0")..$(iso "$t1")"
after="$fx@$(iso "$t2")..$(iso "$t3")"
DOCKER_FLAME_STORE=$DB docker flame diff "$before" "$after" --single -o "$TMP/d.svg" >movers.txt 2>diff.err; rc=$?
is "$rc" 0 "diff of the two stored ranges: exit 0 ($(cat diff.err))"
diag "$(cat movers.txt)"
grew=$(sed -n '/grew most:/,/shrank most:/p' movers.txt | sed '$d')
shrank=$(sed -n '/shrank most:/,$p' movers.txt)
like "$(echo "$grew" | sed -n 2p)" 'FlameFixture\.sortNumbers .*\+' "the top grower is the new hot method"
like "$shrank" '^    FlameFixture\.(countPrimes|isPrime) .*-' \
    "the old hot method is listed as shrinking"
unlike "$shrank" 'sortNumbers' "the new one is not listed as shrinking"
like "$(head -c 2000 "$TMP/d.svg")" '<svg' "the differential graph is written"
is "$(sidecars_of "$fid")" 0 "no sidecar left"
done_testing
