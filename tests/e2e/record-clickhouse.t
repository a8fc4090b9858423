#!/usr/bin/env bash
# `docker flame record` of a real fixture JVM into a real ClickHouse server (Debian's
# clickhouse-server on free ports, tests/e2e/clickhouse-lib.sh) that hangs: stopped with SIGSTOP,
# it still accepts connections but never answers. The sidecar's stream never waits for the store
# (windows go through the recorder's writer thread): one put gives up after its timeout, the next
# windows go to the local spool at once, Ctrl-C ends the recording within seconds, and once the
# server answers again the spool reaches it.
. "$(dirname "$0")/top-lib.sh"
. "$ROOT/tests/e2e/clickhouse-lib.sh"
# A missing server is a failure, never a skip.
ch_have || bail "clickhouse-server is not installed: ./install.sh --deps-only --test-deps"
export XDG_DATA_HOME=$TMP/xdg
unset DOCKER_FLAME_STORE
GEN=$BUILD/store-gen

fx=$(fixture pid1) || bail "fixture pid1 did not start"
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
ch_start one || bail "clickhouse-server one did not start"
STORE="clickhouse://127.0.0.1:$CH_HTTP_one/flame?spool=$TMP/spool.db"
count() { local n; n=$(grep -c "$2" "$1" 2>/dev/null); [ "${n:-0}" -ge "$3" ]; }
resume() { [ -n "${chpid:-}" ] && kill -CONT "$chpid" 2>/dev/null; }
lib_cleanup_extra_ch=$(declare -f lib_cleanup_extra)
lib_cleanup_extra() { resume; eval "${lib_cleanup_extra_ch#*\{}" >/dev/null 2>&1; }

DOCKER_FLAME_TOP_STATS=1 timeout -k 10 600 docker flame record "$fx" --window 1s --store "$STORE" \
    >out 2>err &
pid=$!
wait_for 120 count err "stored (" 2 && ok "windows reach the server" ||
    { nok "windows reach the server"; fdiag "$(cat err)"; }

# The server hangs.
chpid=$(cat "$TMP/ch-one/pid")
kill -STOP "$chpid"
t0=$(date +%s)
before=$(grep -c "stored (" err)
wait_for 120 count err "kept for later" 10 && ok "windows kept while the server hangs" ||
    { nok "windows kept while the server hangs"; fdiag "$(tail -5 err)"; }
took=$(($(date +%s) - t0))
# the first put waits for its timeout (15 s); the windows behind it are not held by it
check "ten windows kept within 60 s of the hang (${took} s)" test "$took" -lt 60
like "$(grep -m1 "kept for later" err)" "cannot reach the server: Timeout was reached" \
    "the first one says the server timed out"
like "$(cat err)" "tried again in [0-9]+ s\)" "the next ones go to the spool without waiting"

ctrl_c "$pid"
t1=$(date +%s)
wait "$pid"; rc=$?
stop_took=$(($(date +%s) - t1))
is "$rc" 0 "Ctrl-C while the server hangs: exit 0"
check "and the recording ends within 45 s (${stop_took} s)" test "$stop_took" -lt 45
like "$(cat err)" "windows wait in $TMP/spool.db" "the closing lines say what waits in the spool"
lat=$(sed -n 's/.*stream: windows arrived at most \([0-9]*\) ms after they ended.*/\1/p' err)
# a window that waited for a put would be at least its 15-s timeout late
check "the stream never waited for the store (windows arrived at most ${lat:-?} ms late)" \
    test "${lat:-999999}" -lt 14000
diag "$(grep -E "stream:|windows, .* samples stored" err)"

# The server answers again: the spool reaches it, each window once.
kill -CONT "$chpid"
chpid=
total=$(sed -n 's/.*: \([0-9]*\) windows, [0-9]* samples stored in .*/\1/p' err | tail -1)
"$GEN" --store "$STORE" --windows 0 --stacks 10 >/dev/null 2>&1
okif $? "the spool is sent once the server answers"
# Each once, but for the put that timed out: the stopped server still had its request and may
# run it when it resumes, after the spool sent the same window: a row more, with the same uid,
# which readers count once (docs/STORE.md, "Each window once").
n=$(ch_sql one "SELECT count() FROM flame.windows WHERE container_name = '$fname'")
check "the server holds every window of the recording (${n:-?} rows for ${total:-?} windows)" \
    test "${n:-0}" -ge "${total:-1}" -a "${n:-0}" -le "$((${total:-0} + 1))"
is "$(ch_sql one "SELECT uniqExact(uid) FROM flame.windows WHERE container_name = '$fname'")" "$total" \
    "each window's uid once"
docker flame show "$fname" --store "$STORE" --since 1h --format folded -o shown.folded 2>shown.err
like "$(cat shown.err)" "\\($total windows," "show counts each window once ($(cat shown.err))"
done_testing
