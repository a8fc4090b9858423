#!/usr/bin/env bash
# `docker flame record --mode wall` stores each window as a profile of type wall (docs/STORE.md
# "Profile types"); `show`, `ls`, `diff` and `merge` select it with --mode. The `sleeper` fixture
# (tests/e2e/mode-offcpu.t) has a thread "sleeper" that sleeps 6-10 ms and spins 1-3 ms, again
# and again, and a thread "worker-0" that spins all the time. Known by construction: over the
# stored windows both threads' on + off CPU time is the same (each is the windows' length), the
# sleeper's sleep is most of its time; the windows are of type wall (ns), not cpu: `show`
# without --mode finds none and says what the store has; the SVG, folded and pprof of `show
# --mode wall` say ns (wall/nanoseconds); `diff --mode wall` of two stored ranges works; a
# stored range of wall against a cpu file is refused (exit 2) (alloc and lock:
# tests/e2e/record-alloc.t; several modes: tests/e2e/record-multi.t). Waits are on events: windows in the store, read with `ls`.
. "$(dirname "$0")/top-lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"

fx=$(fixture sleeper) || bail "fixture sleeper did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
DB=$TMP/rec.db
iso() { date -u -d "@$(($1 / 1000)).$(printf %03d $(($1 % 1000)))" +%Y-%m-%dT%H:%M:%S.%3NZ; }
# the windows of type $1 stored for the fixture (ls: one line per JVM and type)
windows() { docker flame ls --mode "$1" --store "$DB" 2>/dev/null | awk -v c="$fname" '$1 == c { print $(NF - 3) }'; }
has_windows() { [ "$(windows wall)" -ge "$1" ] 2>/dev/null; }
sum() { grep -E -- "$2" "$1" | awk '{ s += $NF } END { printf "%.0f\n", s + 0 }'; }
T="timeout -k 10 150"

# (--mode cpu,wall and the like: tests/e2e/record-multi.t records them)

# --- a recording of wall windows, a mark between two ranges ---
t0=$(now_ms)
timeout -k 10 300 docker flame record "$fx" --mode wall --window 2s --store "$DB" >out 2>err &
pid=$!
if wait_for 120 has_windows 3; then
    ok "wall windows are stored ($(windows wall))"
else
    nok "wall windows are stored"; fdiag "$(cat err)"
fi
t1=$(now_ms)
n1=$(windows wall)
wait_for 120 has_windows $((n1 + 3)) || fdiag "$(cat err)"
t2=$(now_ms)
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "the recording ends with Ctrl-C: exit 0"
like "$(cat err)" 'window [0-9]+ stored \([0-9.]+ s, [0-9,]+ ns\)' "each stored window is counted in ns"
like "$(cat err)" "docker flame show $fname --mode wall --since" "the closing line says how to show them"

ls_out=$(docker flame ls --store "$DB" 2>&1)
diag "$ls_out"
like "$(echo "$ls_out" | head -1)" '^CONTAINER +ID +IMAGE +PID +JAVA +TYPE +HOST' "ls has a TYPE column"
like "$(echo "$ls_out" | awk -v c="$fname" '$1 == c { print $6 }' | sort -u | tr '\n' ' ')" '^wall $' \
    "ls: the fixture's windows are of type wall"
is "$(windows cpu)" "" "ls --mode cpu: none of them"

# --- show: cpu (the default) finds nothing and says what there is ---
out=$(docker flame show "$fx" --since "$(iso "$t0")" --store "$DB" -o "$TMP/cpu.svg" 2>&1); rc=$?
is "$rc" 8 "show without --mode (cpu): nothing stored, exit 8"
like "$out" 'of type wall' "says the store has them as wall ($out)"

# --- show --mode wall: the units of a wall profile ---
docker flame show "$fx" --mode wall --since "$(iso "$t0")" --store "$DB" --format folded -o w.folded 2>show.err; rc=$?
is "$rc" 0 "show --mode wall --format folded: exit 0 ($(cat show.err))"
sl=$(sum w.folded '^sleeper;')
wk=$(sum w.folded '^worker-0;')
check "the sleeper's and the worker's on + off CPU time are alike: each is the windows' length ($(ratio "$sl" "$wk"))" \
    within "$sl" "$wk" 0.8 1.25
sleep_re='^sleeper;.*FlameFixture\.sleepy[^;]*;java\.lang\.Thread\.sleep;'
ws=$(sum w.folded "$sleep_re")
check "the sleeper's sleep: 50-95 % of its time ($(ratio "$ws" "$sl"))" within "$ws" "$sl" 0.5 0.95
check "the values are ns: at least 3 windows of 2 s ($sl ns)" test "$sl" -ge 5000000000
(cd "$TMP" && docker flame show "$fx" --mode wall --since "$(iso "$t0")" --store "$DB" 2>dflt.err); rc=$?
is "$rc" 0 "show --mode wall without -o: exit 0"
svg=$(ls "$TMP"/flame-*.wall.svg 2>/dev/null | head -1)
check "the default name carries the type (${svg##*/})" test -s "$svg"
head=$(head -c 4096 "$svg" 2>/dev/null)
like "$head" 'profile-type: wall' "the SVG carries its type"
like "$(grep -o "[^>]* - wall clock (ns), [^<]*" "$svg" | head -1)" "^$fx - wall clock \\(ns\\), " \
    "its title says wall clock (ns)"
like "$(grep -o '[0-9,]* ns, [0-9.]*%' "$svg" | head -1)" ' ns, ' "its tooltips say ns"
docker flame show "$fx" --mode wall --since "$(iso "$t0")" --store "$DB" -o w.pb.gz 2>/dev/null; rc=$?
is "$rc" 0 "show --mode wall -o w.pb.gz: exit 0"
if have_go; then
    go_env
    st=$(go tool pprof -raw w.pb.gz 2>&1 | sed -n '/^Samples:/,/^ *[0-9]/p' | head -3)
    like "$st" 'wall/nanoseconds' "pprof: sample type wall/nanoseconds, as go tool pprof reads it"
else
    nok "go tool pprof is missing (install.sh --test-deps installs golang-go)"
fi

# --- diff and merge of stored wall ranges ---
before="$fx@$(iso "$t0")..$(iso "$t1")"
after="$fx@$(iso "$t1")..$(iso "$t2")"
DOCKER_FLAME_STORE=$DB docker flame diff --mode wall "$before" "$after" --single -o d.svg >movers.txt 2>diff.err; rc=$?
is "$rc" 0 "diff --mode wall of two stored ranges: exit 0 ($(cat diff.err))"
like "$(head -c 4096 d.svg)" 'profile-type: wall' "the differential is of type wall"
DOCKER_FLAME_STORE=$DB docker flame merge --mode wall "$before" "$after" -o m.folded 2>merge.err; rc=$?
is "$rc" 0 "merge --mode wall of two stored ranges: exit 0 ($(cat merge.err))"
ms=$(sum m.folded '^sleeper;')
check "the merge holds the sleeper's time ($ms ns)" test "$ms" -ge 5000000000
cp w.folded x.wall.folded
out=$(DOCKER_FLAME_STORE=$DB docker flame diff "$before" x.wall.folded -o d3.svg 2>&1); rc=$?
is "$rc" 2 "a stored range (cpu by default) against a wall file: refused, exit 2"
like "$out" 'profile of cpu .* but x\.wall\.folded of wall .*--mode' "says why and what to give ($out)"
is "$(sidecars_of "$fid")" 0 "no sidecar left"
done_testing
