#!/usr/bin/env bash
# `docker flame record`: windows of a real fixture JVM stored in a SQLite store as they complete,
# Ctrl-C ends it with exit 0 and a summary; `show` of the range names the hot method, `ls` lists
# the container with its windows, `show --timeline` draws them; an unusable store is refused
# before any container is created; the container stopping ends the recording with a clear line
# and exit 3, the windows already stored are kept; nothing left in or next to the target; two
# containers recorded at once, one restarting while the other goes on.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fid=$(docker inspect -f '{{.Id}}' "$fx")
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
hp=$(host_pid "$fx")
HOT='FlameFixture\.(countPrimes|isPrime)'
DB=$TMP/rec.db
stored() { local n; n=$(grep -c "stored (" "$1" 2>/dev/null); [ "${n:-0}" -ge "$2" ]; }
no_sidecar() { [ "$(sidecars_of "$fid")" -eq 0 ]; }

# An unusable store: one line, exit 7, and no sidecar was ever created.
mkdir -p "$TMP/ro" && echo "not a database" >"$TMP/ro/bad.db"
docker flame record "$fx" --store "$TMP/ro/bad.db" >out 2>err; rc=$?
is "$rc" 7 "a damaged store file: exit 7"
is "$(wc -l <err)" 1 "one line on stderr ($(cat err))"
is "$(sidecars_of "$fid")" 0 "no sidecar created for an unusable store"
docker flame record >out 2>err; rc=$?
is "$rc" 2 "no container: exit 2"
like "$(cat err)" 'which container' "says what is missing"

timeout -k 10 300 docker flame record "$fx" --window 1s --store "$DB" >out 2>err &
pid=$!
if wait_for 120 stored err 3; then ok "three windows stored"; else nok "three windows stored"; fdiag "$(cat err)"; fi
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "Ctrl-C: exit status 0"
diag "$(cat err)"
like "$(head -1 err)" "recording ${fid:0:12} into $DB in 1-s windows at 49 Hz" "says what it records, where"
like "$(tail -1 err)" "[0-9,]+ windows, [0-9,]+ samples stored in $DB; see them with: docker flame show" \
    "a closing summary that says how to look at it"
is "$(sidecars_of "$fid")" 0 "no sidecar left"
is "$(flame_mounts "$hp")" 0 "no docker-flame mount left in the target"

docker flame show "$fx" --store "$DB" --since 10m --format folded -o - >show.folded 2>err2; rc=$?
is "$rc" 0 "show of the recorded range: exit 0"
like "$(cat show.folded)" "$HOT" "the stored windows name the fixture's hot method"
docker flame ls --store "$DB" >ls.txt 2>err2; rc=$?
is "$rc" 0 "ls: exit 0"
like "$(cat ls.txt)" "^$fname +${fid:0:12} +flame-fixture" "ls lists the recorded container, its id and image"
wins=$(awk -v c="$fname" '$1 == c { print $(NF - 3) }' ls.txt)
check "ls counts every stored window ($wins >= 3; the one Ctrl-C cut short is kept too)" \
    test "${wins:-0}" -ge 3
diag "$(cat ls.txt)"
docker flame show "$fx" --store "$DB" --since 10m --timeline -o tl.svg 2>err2; rc=$?
is "$rc" 0 "show --timeline: exit 0"
like "$(head -c 300 tl.svg)" '<svg' "the timeline is an SVG"

# A one-shot profile of the same JVM while it is recorded (a quick look while `record` runs):
# each has its own agent map (docs/SIDECAR.md, "Attach"), so the recording keeps naming what is
# compiled after the one-shot ended: lateBloomer, started then (SIGHUP). With one shared
# /tmp/perf-<pid>.map the one-shot's end deleted the recording's map and its agent went quiet:
# new code stayed unnamed ([perf-1.map]) and nothing said so (83 % of the samples of a young JVM).
unnamed_jit() { awk '{ c = $NF; t += c; if ($0 ~ /\[perf-[0-9]+[^]]*\.map\]/) u += c } END { print u + 0, t + 0 }' "$1"; }
timeout -k 10 300 docker flame record "$fx" --window 1s --store "$TMP/both.db" >out 2>errb &
pid=$!
wait_for 120 stored errb 1 || nok "the recording stores a window before the one-shot"
timeout -k 5 120 docker flame -d 2 --format folded -o one.folded "$fx" 2>erro
okif $? "a one-shot profile while the JVM is recorded: exit 0"
like "$(cat one.folded)" "$HOT" "the one-shot names the hot method"
t1=$(date +%H:%M:%S)
docker kill -s HUP "$fx" >/dev/null
n=$(grep -c "stored (" errb)
if wait_for 120 stored errb $((n + 4)); then ok "four more windows after the one-shot"; else nok "four more windows after the one-shot"; fdiag "$(cat errb)"; fi
ctrl_c "$pid"
wait $pid
is "$?" 0 "that recording: exit 0 on Ctrl-C"
docker flame show "$fx" --store "$TMP/both.db" --since "$t1" --format folded -o after.folded 2>err2
like "$(cat after.folded)" 'FlameFixture\.lateBloomer' "the recording names lateBloomer, first compiled after the one-shot ended"
read -r u t < <(unnamed_jit after.folded)
# 15 %, not 1 %: lateBloomer's code is compiled after the SIGHUP (tier by tier: a new nmethod
# each time), and a frame in an nmethod the recorder first read in the pass draining its sample
# or the one before stays unnamed (docs/SIDECAR.md, "Code read too recently": ~100 ms of every
# new nmethod; 13 of 220 samples at load ~10); code named by the agent's map waits for its line
# (a CI run: 3 of 172 samples; 5 of 14 in a helper's run at load 15), and two such samples are
# allowed whatever the count; the shared map's failure was 83 %
check "the recording after the one-shot ended: $t samples, at most 15 % (or 2) with an unnamed JIT frame ($u)" \
    test "$t" -gt 0 -a \( $((100 * u)) -le $((15 * t)) -o "$u" -le 2 \)
unlike "$(cat errb)" 'warning' "the recording: no warning"

# The container stops while recorded: the recording waits for it, records it again once it is
# started again, and ends with a clear line (exit 3) when it is removed; its windows stay.
timeout -k 10 300 docker flame record "$fx" --window 1s --store "$DB" >out 2>err3 &
pid=$!
wait_for 120 stored err3 2 && ok "second recording stores windows" || { nok "second recording stores windows"; fdiag "$(cat err3)"; }
docker stop -t 2 "$fx" >/dev/null
waiting() { grep -q 'stopped: waiting for it to start again' err3; }
wait_for 60 waiting && ok "the container stopped: the recording says it waits" || nok "the container stopped: the recording says it waits"
check "the recorder is still running" kill -0 $pid
wait_for 30 no_sidecar && ok "container stopped: no sidecar left" || nok "container stopped: no sidecar left"
n_before=$(grep -c 'stored (' err3)
docker start "$fx" >/dev/null
more() { [ "$(grep -c 'stored (' err3)" -ge $((n_before + 2)) ]; }
wait_for 120 more && ok "started again: recorded again" || { nok "started again: recorded again"; fdiag "$(cat err3)"; }
docker rm -f "$fx" >/dev/null
gone() { ! kill -0 $pid 2>/dev/null; }
if wait_for 60 gone; then
    wait $pid; rc=$?
    is "$rc" 3 "the container was removed: exit 3"
    like "$(cat err3)" 'was removed: its recording ends' "says the recording ended, and why"
else
    nok "the recording ended after the container was removed"; kill -TERM $pid
fi
diag "$(cat err3)"
wait_for 30 no_sidecar && ok "no sidecar left" || nok "no sidecar left"
docker flame show "$fid" --store "$DB" --since 10m --format folded -o - >show2.folded 2>/dev/null
like "$(cat show2.folded)" "$HOT" "the windows of every recording are still readable (by container id)"

# Two containers in the foreground: each has its own recorder, so one restarting never pauses
# the other; one Ctrl-C ends both (exit 0), each with its closing summary.
p=$(fixture pid1) || bail "fixture did not start"
q=$(fixture pid1) || bail "fixture did not start"
pn=$(docker inspect -f '{{.Name}}' "$p"); pn=${pn#/}
qn=$(docker inspect -f '{{.Name}}' "$q"); qn=${qn#/}
timeout -k 10 300 docker flame record "$pn" "$qn" --window 1s --store "$DB" >out 2>err4 &
pid=$!
wins() { local n; n=$(grep -c "^docker flame record: $1: window [0-9]* stored" err4 2>/dev/null); echo "${n:-0}"; } # err4 may not exist yet
both() { [ "$(wins "$pn")" -ge 2 ] && [ "$(wins "$qn")" -ge 2 ]; }
wait_for 120 both && ok "two containers: both stored" || { nok "two containers: both stored"; fdiag "$(cat err4)"; }
np=$(wins "$pn"); nq=$(wins "$qn")
docker restart -t 1 "$pn" >/dev/null
again() { [ "$(wins "$pn")" -ge $((np + 2)) ]; }
wait_for 120 again && ok "$pn recorded again after its restart" || { nok "$pn recorded again after its restart"; fdiag "$(cat err4)"; }
check "$qn went on meanwhile ($(wins "$qn") > $((nq + 1)))" test "$(wins "$qn")" -gt $((nq + 1))
like "$(cat err4)" "$pn stopped: waiting for it to start again" "says $pn stopped and is waited for"
ctrl_c "$pid"
wait $pid; rc=$?
is "$rc" 0 "one Ctrl-C ends both: exit 0"
like "$(cat err4)" "$pn: [0-9,]+ windows, [0-9,]+ samples stored" "$pn's summary"
like "$(cat err4)" "$qn: [0-9,]+ windows, [0-9,]+ samples stored" "$qn's summary"
unlike "$(cat err4)" 'abort' "nothing aborted (each recorder saw one Ctrl-C)"
wait_for 30 bash -c "[ \$(docker ps -aq --filter label=com.docker-flame.sidecar=1 | wc -l) -eq 0 ]" &&
    ok "no sidecar left" || nok "no sidecar left"
docker flame show "$pn" --store "$DB" --since 10m --format folded -o - >show3.folded 2>/dev/null
like "$(cat show3.folded)" "$HOT" "the range that spans the restart names the hot method"
done_testing
