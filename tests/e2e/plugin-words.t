#!/usr/bin/env bash
# What the CLI says, the same way in every verb: `help` and `version` are verbs (never a container
# lookup); `top` and `record` word a sidecar's error as the one-shot does (no protocol code such as
# "no_jvm:"); the main --help lists every exit code; every --help starts "Usage:  docker flame"
# (Docker's two spaces) and has its exit statuses; -i is top's --interval (render's --inverted
# keeps -i working, unlisted); counts for people carry thousands separators and agree (no
# "processing N samples" that the summary contradicts); merge says "1 input"; -q on a terminal
# still says how long a long recording runs; a profile that is mostly outside Java methods says
# so under its top methods.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 120"
FLAME=$BUILD/docker-flame

# help and version
out=$(docker flame help 2>err); rc=$?
is "$rc" 0 "docker flame help: exit 0"
like "$out" '^Usage:  docker flame \[OPTIONS\] CONTAINER' "docker flame help: the help, on stdout"
is "$(cat err)" "" "docker flame help: nothing on stderr (no container lookup)"
like "$(docker flame help diff 2>&1)" '^Usage:  docker flame diff' "docker flame help diff: diff's help"
is "$(docker flame version 2>&1)" "docker-flame version $VERSION" "docker flame version"
docker flame help nosuch >out 2>err; rc=$?
is "$rc" 2 "docker flame help nosuch: exit 2"
is "$(cat err)" 'docker flame help: nosuch: no such command (see `docker flame --help`)' "... one line"

done_testing
