#!/usr/bin/env bash
# Runs last: nothing the suite did may remain — no sidecar or test containers (other than this
# run's own cleanup, which tests/run does after), no docker-flame mounts in any mount namespace,
# no temporary file or directory of the tests in /tmp or /dev/shm.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
# sidecars that were there before tests/run started (their ids are in its start marker) are
# not the suite's doing
before=
[ -n "${FLAME_SUITE_START:-}" ] && [ -s "$FLAME_SUITE_START" ] && before=$FLAME_SUITE_START
left=$(docker ps -aq --no-trunc --filter label=com.docker-flame.sidecar=1 | { if [ -n "$before" ]; then grep -vxF -f "$before"; else cat; fi; })
is "$(printf '%s' "$left" | grep -c .)" 0 "no sidecar container left"
[ -n "$before" ] && diag "$(wc -l <"$before") sidecar container(s) predate this run: not counted"
left=$(docker ps -a --filter label=docker-flame-test=1 --format '{{.ID}} {{.Label "docker-flame-test.variant"}} {{.Status}}')
is "$left" "" "no fixture container left by the tests"
m=$(grep -l 'docker-flame' /proc/[0-9]*/mountinfo 2>/dev/null | head -3)
is "$m" "" "no docker-flame mount left in any mount namespace"
# the names the tests give their temporaries (browser profiles, scratch dirs, unit tests, JVM
# perf maps), made since tests/run started; this test's own $TMP is still there, of course
if [ -n "${FLAME_SUITE_START:-}" ] && [ -e "$FLAME_SUITE_START" ]; then
    left=$(find "${TMPDIR:-/tmp}" /dev/shm -maxdepth 1 -newer "$FLAME_SUITE_START" \( -name 'flame-*' -o -name 'agent-*' \
        -o -name 'test_*' -o -name 'perf-*.map' \) ! -path "$FLAME_SUITE_START" ! -path "$TMP" 2>/dev/null)
    is "$left" "" "no temporary file or directory of the tests left in /tmp or /dev/shm"
else
    skip_or_fail "not run by tests/run: no start marker to compare with"
fi
done_testing
