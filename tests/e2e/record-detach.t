#!/usr/bin/env bash
# `docker flame record --detach`, `ps`, `stop`: background recorders that outlive the command
# and its session, one per container, each following its own container's life (one restarts,
# the other goes on); `stop` ends one and reports it; a recorder killed with SIGKILL is reported
# once and its sidecar is gc's; refusals (bad store, unknown container, unknown recording) come
# before anything runs. Then, on a PRIVATE second engine: the engine restarts under a detached
# recording (its container has a restart policy): the recording waits for the engine, sweeps the
# sidecar the restart left behind, and records again.
. "$(dirname "$0")/top-lib.sh"
. "$ROOT/tests/e2e/engine2-lib.sh"
export XDG_STATE_HOME=$TMP/state XDG_DATA_HOME=$TMP/data
DB=$TMP/rec.db
HOT='FlameFixture\.(countPrimes|isPrime)'
ORIG_DOCKER_HOST=${DOCKER_HOST-unset}
teardown() {
    docker flame stop --all -t 30s >/dev/null 2>&1
    engine2_teardown
    # the second half talks to the private engine: clean up on the suite's engine again
    if [ "$ORIG_DOCKER_HOST" = unset ]; then unset DOCKER_HOST; else export DOCKER_HOST=$ORIG_DOCKER_HOST; fi
    _cleanup
}
trap teardown EXIT

# ps_field NAME COLUMN: a column of NAME's row in `docker flame ps` (2 container, 5 windows,
# 6 samples, 7 state, 8 pid); empty when not listed.
ps_field() { docker flame ps 2>/dev/null | awk -v c="$1" -v k="$2" '$2 == c { print $k; exit }'; }
windows_over() { local w; w=$(ps_field "$1" 5); [ "${w:-0}" -gt "$2" ]; }
# a process that has exited (a zombie counts: its new parent reaps it when it gets to it)
gone() { ! kill -0 "$1" 2>/dev/null || [ "$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
state_is() { [ "$(ps_field "$1" 7)" = "$2" ]; }

# A crafted registry (its files are read as hostile): the log shown for an entry is <id>.log,
# a regular file, never the path its JSON names (another file's contents, a FIFO that would hang
# ps). Each in a state directory of its own: ps forgets an entry once shown.
crafted_ps() { # LOGPATH: ps of an entry of a killed recorder whose JSON names LOGPATH
    local st=$TMP/crafted-$RANDOM id=0123456789abcdef
    mkdir -p "$st/docker-flame/recordings" && chmod -R 700 "$st"
    printf '{"version":1,"id":"%s","arg":"crafted","state":"recording","log":"%s","exit_code":3}' \
        "$id" "$1" >"$st/docker-flame/recordings/$id.json"
    : >"$st/docker-flame/recordings/$id.lock"
    XDG_STATE_HOME=$st timeout -k 2 10 docker flame ps 2>&1
}
echo "a line of another file" >"$TMP/other.txt"
out=$(crafted_ps "$TMP/other.txt"); rc=$?
is "$rc" 0 "ps of an entry whose JSON names another file as its log: exit 0"
like "$out" "crafted .* killed" "the entry is listed"
unlike "$out" "a line of another file" "that file is not shown"
mkfifo "$TMP/fifo"
out=$(crafted_ps "$TMP/fifo"); rc=$?
is "$rc" 0 "ps of an entry whose JSON names a FIFO as its log: answers at once, exit 0"

a=$(fixture pid1) || bail "fixture did not start"
b=$(fixture pid1) || bail "fixture did not start"
an=$(docker inspect -f '{{.Name}}' "$a"); an=${an#/}
bn=$(docker inspect -f '{{.Name}}' "$b"); bn=${bn#/}

# Refusals: nothing starts, nothing is registered.
mkdir -p "$TMP/bad" && echo "not a database" >"$TMP/bad/x.db"
docker flame record --detach "$an" --store "$TMP/bad/x.db" >out 2>err; rc=$?
is "$rc" 7 "--detach with a damaged store: exit 7"
is "$(wc -l <err)" 1 "one line ($(head -c 200 err))"
docker flame record --detach no-such-container-$$ --store "$DB" >out 2>err; rc=$?
is "$rc" 3 "--detach of an unknown container: exit 3"
like "$(cat err)" "no such container: no-such-container-$$" "says which container"
is "$(docker flame ps -q | wc -l)" 0 "nothing registered after the refusals"

# Two containers in the background; the command returns once both record: as soon as each
# sidecar's recorder runs (its first progress line), like `docker run -d`, not after a whole
# window (30 s here; the old wait). fd 9 stands for a pipe a CI runner or an IDE started the
# command with: a recording that runs for days must not hold it.
t0=$(date +%s%N)
timeout -k 5 120 docker flame record --detach "$an" "$bn" --window 30s --store "$DB" >out 2>err 9>"$TMP/held-by-ci"; rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
is "$rc" 0 "record --detach: exit 0"
diag "$(cat err)" "record --detach of two containers, 30-s windows: returned in $ms ms"
check "returned once both record, not after their first 30-s window ($ms ms < 12 s)" test "$ms" -lt 12000
like "$(cat err)" "$an is recorded in the background \(pid [0-9]+\): .docker flame ps. lists it, .docker flame stop $an. ends it" \
    "says how to list it and how to end it"
is "$(docker flame ps -q | wc -l)" 2 "ps: two recordings"
pa=$(ps_field "$an" 8); pb=$(ps_field "$bn" 8)
check "each recorder is a live process of its own ($pa, $pb)" kill -0 "${pa:-0}" "${pb:-0}"
check "they are not the same process" test "$pa" != "$pb"
sid=$(awk '{ sub(/.*\) /, ""); print $4 }' "/proc/$pa/stat" 2>/dev/null)
is "$sid" "$pa" "the recorder leads a session of its own (no terminal: no SIGHUP when it closes)"
is "$(readlink "/proc/$pa/fd/0")" /dev/null "its stdin is /dev/null"
check "the recorder does not keep the test's directory busy" test "$(readlink "/proc/$pa/cwd")" = /
held=$(ls -l "/proc/$pa/fd/" "/proc/$pb/fd/" 2>/dev/null | grep -c held-by-ci)
is "$held" 0 "the recorders closed the fds they inherited (fd 9 of the command)"
is "$(awk '/^Umask:/ { print $2 }' "/proc/$pa/status")" 0077 "the recorder's umask is 077 (its log, store and spool are the user's only)"
wait_for 60 state_is "$an" recording && ok "$an: recording" || nok "$an: recording"
docker flame stop --all -t 30s >/dev/null 2>&1
wait_for 10 gone "$pa" && wait_for 10 gone "$pb" || nok "the two 30-s recorders ended"

timeout -k 5 120 docker flame record --detach "$an" "$bn" --window 1s --store "$DB" >out 2>err; rc=$?
is "$rc" 0 "record --detach with 1-s windows: exit 0"
pa=$(ps_field "$an" 8); pb=$(ps_field "$bn" 8)
wait_for 120 windows_over "$an" 1 && ok "$an: windows stored in the background" || nok "$an: windows stored in the background"
wait_for 60 windows_over "$bn" 1 && ok "$bn: windows stored in the background" || nok "$bn: windows stored in the background"
is "$(ps_field "$an" 7)" recording "ps: state recording"

# One container restarts: its recorder waits and records it again; the other never pauses.
wa=$(ps_field "$an" 5); wb=$(ps_field "$bn" 5)
docker restart -t 1 "$an" >/dev/null
wait_for 120 windows_over "$an" $((wa + 2)) && ok "$an: recorded again after its restart" ||
    { nok "$an: recorded again after its restart"; fdiag "$(docker flame ps)"; }
check "$bn went on meanwhile" windows_over "$bn" $((wb + 2))
is "$(ps_field "$an" 8)" "$pa" "the same recorder goes on (no new process)"

# stop one: it stores its window, removes its sidecar, ends; the other goes on.
aid=$(docker inspect -f '{{.Id}}' "$a")
timeout -k 5 90 docker flame stop "$an" >out 2>err; rc=$?
is "$rc" 0 "stop: exit 0"
like "$(cat err)" "^docker flame stop: stopped the recording of $an: [0-9,]+ windows, [0-9,]+ samples in $DB" "stop says what was stored, where (on stderr, as show and prune report)"
is "$(cat out)" "" "stop prints nothing on stdout"
wait_for 10 gone "$pa" && ok "the recorder has ended" || nok "the recorder has ended"
is "$(ps_field "$an" 2)" "" "ps no longer lists it"
is "$(sidecars_of "$aid")" 0 "no sidecar left for $an"
is "$(docker flame ps -q | wc -l)" 1 "the other recording goes on"
docker flame stop no-such-recording >out 2>err; rc=$?
is "$rc" 3 "stop of an unknown recording: exit 3"
like "$(cat err)" 'no background recording of no-such-recording \(docker flame ps lists them\)' "says so, and where to look"

# A recorder killed with SIGKILL: reported once as killed, with what to do; gc removes its sidecar.
bid=$(docker inspect -f '{{.Id}}' "$b")
kill -KILL "$pb"
wait_for 30 gone "$pb" || nok "the recorder did not die"
docker flame ps >ps.txt 2>&1
like "$(cat ps.txt)" "$bn .* killed " "ps reports the killed recording once"
like "$(cat ps.txt)" 'docker flame gc. removes its sidecar' "with what to do about it"
is "$(docker flame ps -q | wc -l)" 0 "then it is forgotten"
timeout -k 5 120 docker flame gc >/dev/null 2>&1
is "$(sidecars_of "$bid")" 0 "gc removed the killed recorder's sidecar"

# The store's secrets and paths in the background. A ClickHouse password given in the URL is not
# left in the recorder's command line (ps, /proc/PID/cmdline) for the recording's life; every
# relative path of the store (a ?spool= parameter, $DOCKER_FLAME_STORE) is the one the command
# was given from, not one under / (where the recorder moves). Nothing listens on port 1: every
# window goes to the spool.
d=$(fixture pid1) || bail "fixture did not start"
dn=$(docker inspect -f '{{.Name}}' "$d"); dn=${dn#/}
rel=rel-$$
(cd "$TMP" && timeout -k 5 120 docker flame record --detach "$dn" --window 1s \
    --store "clickhouse://alice:S3cretPw@127.0.0.1:1/flame?spool=$rel-spool.db" >out 2>err); rc=$?
is "$rc" 0 "record --detach into a ClickHouse URL with a password: exit 0" || fdiag "$(cat "$TMP/err")"
pd=$(ps_field "$dn" 8)
check "its recorder runs ($pd)" kill -0 "${pd:-0}"
unlike "$(tr '\0' ' ' <"/proc/$pd/cmdline")" "S3cretPw" "its command line no longer holds the password"
like "$(tr '\0' ' ' <"/proc/$pd/cmdline")" "clickhouse://alice:\*@127.0.0.1:1/flame" "the URL is there, the password starred"
unlike "$(docker flame ps)" "S3cretPw|alice" "nor does ps's STORE column"
wait_for 120 windows_over "$dn" 2 && ok "windows kept while the server is unreachable" || nok "windows kept while the server is unreachable"
check "in the spool given relative to the command's directory" test -s "$TMP/$rel-spool.db"
check "not in one under /" test ! -e "/$rel-spool.db"
timeout -k 5 90 docker flame stop "$dn" >/dev/null 2>&1
(cd "$TMP" && DOCKER_FLAME_STORE=$rel.db timeout -k 5 120 docker flame record --detach "$dn" \
    --window 1s >out 2>err); rc=$?
is "$rc" 0 "record --detach into a relative \$DOCKER_FLAME_STORE: exit 0" || fdiag "$(cat "$TMP/err")"
wait_for 120 windows_over "$dn" 1 && ok "windows stored" || nok "windows stored"
timeout -k 5 90 docker flame stop "$dn" >/dev/null 2>&1
check "into the store named relative to the command's directory" test -s "$TMP/$rel.db"
check "not into one under /" test ! -e "/$rel.db"
rm -f "/$rel-spool.db" "/$rel.db" # what an old build made there

# The store holds both containers' windows, across the restart.
docker flame show "$an" --store "$DB" --since 10m --format folded -o - >a.folded 2>err; rc=$?
is "$rc" 0 "show of the range that spans the restart: exit 0"
like "$(cat a.folded)" "$HOT" "names the fixture's hot method"
is "$(ls -A "$XDG_STATE_HOME/docker-flame/recordings" 2>/dev/null)" "" "nothing left in the registry"

# An engine restart under a detached recording, on a private engine (no live-restore: the engine
# stops the containers; the fixture's restart policy starts it again).
engine2_start || { diag "$(tail -20 "$D2/log")"; bail "the private dockerd did not start"; }
docker save flame-fixture-jvm:latest | docker -H "$ENGINE2_SOCK" load >/dev/null || bail "cannot load the fixture image"
export DOCKER_HOST=$ENGINE2_SOCK
c=$(fixture pid1) || bail "fixture did not start on the private engine"
docker update --restart unless-stopped "$c" >/dev/null
cn=$(docker inspect -f '{{.Name}}' "$c"); cn=${cn#/}
timeout -k 5 300 docker flame record --detach "$cn" --window 1s --store "$DB" >out 2>err; rc=$?
is "$rc" 0 "private engine: record --detach: exit 0" || fdiag "$(cat err)"
wait_for 120 windows_over "$cn" 1 && ok "private engine: windows stored" || nok "private engine: windows stored"
pc=$(ps_field "$cn" 8)
engine2_stop
# a plain ps forgets an ended recording with its log: keep a copy for the failure's message
state_kept() { cp "$XDG_STATE_HOME"/docker-flame/recordings/*.log "$TMP/last.log" 2>/dev/null; state_is "$@"; }
wait_for 60 state_kept "$cn" engine-down && ok "ps: engine-down while the engine is stopped" ||
    { nok "ps: engine-down while the engine is stopped"; fdiag "$(docker flame ps)" "$(tail -5 "$TMP/last.log")"; }
wc0=$(ps_field "$cn" 5)
engine2_start || bail "the private dockerd did not come back"
wait_for 180 windows_over "$cn" $((wc0 + 1)) && ok "recorded again after the engine restart" ||
    { nok "recorded again after the engine restart"; fdiag "$(docker flame ps)" "$(cat "$XDG_STATE_HOME"/docker-flame/recordings/*.log)"; }
is "$(ps_field "$cn" 8)" "$pc" "by the same recorder"
log=$(cat "$XDG_STATE_HOME"/docker-flame/recordings/*.log 2>/dev/null)
like "$log" 'the Docker engine does not answer' "its log says it waited for the engine"
like "$log" 'removed 1 sidecar the interruption left behind' "and that it swept the sidecar the restart left"
timeout -k 5 90 docker flame stop "$cn" >out 2>err; rc=$?
is "$rc" 0 "private engine: stop: exit 0"
is "$(docker ps -aq --filter label=com.docker-flame.sidecar=1 | wc -l)" 0 "no sidecar left on the private engine"
done_testing
