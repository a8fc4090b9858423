#!/usr/bin/env bash
# What the CLI says, the same way in every verb: `help` and `version` are verbs (never a container
# lookup); `top` and `record` word a sidecar's error as the one-shot does (no protocol code such as
# "no_jvm:"); the main --help lists every exit code; every --help starts "Usage:  docker flame"
# (Docker's two spaces) and has its exit statuses; -i is top's --interval (render's --inverted
# keeps -i working, unlisted); counts for people carry thousands separators and agree (no
# "processing N samples" that the summary contradicts); merge says "1 input"; -q on a terminal
# still says how long a long recording runs; a profile that is mostly outside Java methods says
# so under its top methods; merge and diff of alloc profiles say bytes.
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

# --help: every exit code, one Usage spacing, exit statuses everywhere
main=$(docker flame --help)
like "$main" '7 profile store unusable' "main --help lists exit code 7"
like "$main" '8 nothing stored' "main --help lists exit code 8"
for v in "" fold render diff merge gc top host record ps stop show ls prune help version; do
    h=$(docker flame $v --help 2>&1)
    like "$(printf '%s\n' "$h" | head -1)" "^Usage:  docker flame${v:+ $v}( |\$)" "${v:-flame} --help: 'Usage:  docker flame${v:+ $v}' (two spaces)"
    like "$h" 'Exit status: 0' "${v:-flame} --help: its exit statuses"
done
like "$(docker flame top --help)" '-i, --interval' "top: -i is --interval"
unlike "$(docker flame render --help)" '-i, ' "render --help: no -i (--inverted only)"
unlike "$(docker flame render --help)" 'see `docker flame render --help`' "render --help does not send the reader to itself"
printf 'main;a 3\nmain;b 1\n' >i.folded
docker flame render -i i.folded -o i1.svg && docker flame render --inverted i.folded -o i2.svg
check "render -i (the old spelling) still means --inverted" cmp -s i1.svg i2.svg

# merge: "1 input", the sample count with separators, a subtitle
printf 'main;a 12000\nmain;b 345\n' >big.folded
docker flame merge big.folded -o one.svg 2>err
is "$(cat err)" "docker flame merge: wrote one.svg (1 input, 12,345 samples)" "merge of one: '1 input', '12,345 samples'"
like "$(cat one.svg)" 'Merged profile \(1 input\)' "the graph's title says 1 input"
like "$(cat one.svg)" '12,345 samples from 1 profile' "and its subtitle the samples"
# an alloc profile counts bytes: merge's and diff's summaries say so, as their graphs do
printf 'main;A.alloc 1000\nmain;B.alloc 500\n' >x.alloc.folded
printf 'main;A.alloc 1500\nmain;B.alloc 500\n' >y.alloc.folded
docker flame merge x.alloc.folded y.alloc.folded -o ma.svg 2>err
is "$(cat err)" "docker flame merge: wrote ma.svg (2 inputs, 3,500 bytes)" "merge of alloc profiles: bytes, not samples"
out=$(docker flame diff x.alloc.folded y.alloc.folded -o da.svg 2>/dev/null)
like "$out" 'totals 1,500 -> 2,000 bytes\)' "diff of alloc profiles: the totals in bytes"
like "$out" "% of each profile's bytes\\)" "diff of alloc profiles: shares of bytes"
like "$(docker flame diff big.folded big.folded -o db.svg 2>/dev/null)" "% of each profile's samples\\)" "a cpu diff: shares of samples"

# top and record: the one-shot's words for the sidecar's errors
nj=$(fixture nojvm) || bail "fixture nojvm did not start"
njn=$(docker inspect -f '{{.Name}}' "$nj"); njn=${njn#/}
$T docker flame -d 1 "$nj" >/dev/null 2>one.err; rc1=$?
$T docker flame top "$nj" >/dev/null 2>top.err; rc=$?
is "$rc $rc1" "4 4" "top of a container without a JVM: exit 4, as the one-shot"
like "$(cat top.err)" "^docker flame top: no JVM in container $njn: " "top: the one-shot's words ($(head -c 150 top.err))"
unlike "$(cat top.err)" 'no_jvm' "top: no protocol code"
$T docker flame record "$nj" --store "$TMP/r.db" >/dev/null 2>rec.err; rc=$?
is "$rc" 4 "record of a container without a JVM: exit 4"
like "$(cat rec.err)" "docker flame record: no JVM in container $njn: " "record: the one-shot's words"
unlike "$(cat rec.err)" 'no_jvm' "record: no protocol code"

# one profile's words: counts with separators that agree; no count that the summary contradicts;
# where the time went when it is not mostly Java
fx=$(fixture native) || bail "fixture native did not start"
$T docker flame -d 3 -F 499 --format folded -o n.folded "$fx" 2>n.err; rc=$?
is "$rc" 0 "a profile of the native fixture: exit 0"; [ "$rc" = 0 ] || fdiag "$(cat n.err)"
total=$(awk '{ n += $NF } END { print n }' n.folded)
want=$(python3 -c "import sys; print(f'{int(sys.argv[1]):,}')" "$total")
like "$(cat n.err)" ": $want samples" "the summary's count is the profile's, with separators ($want)"
# (the line itself is not always printed: a short profile may be processed between two looks;
# tests/unit/plugin_progress.c checks its words)
unlike "$(cat n.err)" 'processing [0-9,]+ samples' "no 'processing N samples' line (its count lags the summary's)"
like "$(cat n.err)" '[0-9.]+%  outside Java methods \(JIT compiler, GC, VM and native code\)' \
    "a profile mostly outside Java methods says so under its top methods"

# -q on a terminal: one line for a recording until Ctrl-C (scripts: nothing, as before)
out=$($T docker flame -q -d 1 -o q.svg "$fx" 2>&1)
is "$out" "" "-q without a terminal: nothing"
# (script(1) gives the plugin a terminal; timeout's SIGINT is the Ctrl-C; the log's own
# "Script started/done" lines are script's)
script -qfec "timeout --preserve-status -s INT 6 $FLAME flame -q -d 0 -o tty.svg $fx" tty.log >/dev/null 2>&1; rc=$?
said=$(tr -d '\r' <tty.log | grep -v '^Script \|^$')
is "$rc" 0 "-q -d 0 on a terminal, then Ctrl-C: exit 0"
is "$said" "docker flame: recording $fx until Ctrl-C; Ctrl-C stops early and still writes the graph" \
    "-q on a terminal: one line saying how long it records, nothing else"
check "... and the graph was written" test -s tty.svg
done_testing
