#!/usr/bin/env bash
# Runs last: nothing the suite did may remain — no sidecar or test containers (other than this
# run's own cleanup, which tests/run does after), no docker-flame mounts in any mount namespace.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
is "$(docker ps -aq --filter label=com.docker-flame.sidecar=1 | wc -l)" 0 "no sidecar container left"
left=$(docker ps -a --filter label=docker-flame-test=1 --format '{{.ID}} {{.Label "docker-flame-test.variant"}} {{.Status}}')
is "$left" "" "no fixture container left by the tests"
m=$(grep -l 'docker-flame' /proc/[0-9]*/mountinfo 2>/dev/null | head -3)
is "$m" "" "no docker-flame mount left in any mount namespace"
done_testing
