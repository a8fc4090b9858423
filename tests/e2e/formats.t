#!/usr/bin/env bash
# One rule for the format of every verb that writes a profile (docs/PLUGIN.md "Formats"): without
# --format a known extension of the output name decides (.svg; .folded .txt .collapsed;
# .speedscope.json .json; .pb.gz .pb .pprof), and an extension that names another format than
# --format (or one the verb cannot write) is refused with exit 2 and one line, before anything
# runs. For the profile verb, diff, merge, render, show (and --timeline), host (and --timeline)
# and top --record, each with what it writes sniffed from the bytes.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 120"
GEN=$BUILD/store-gen
[ -x "$GEN" ] || bail "build first (make): $GEN"

# what a file holds, from its first bytes
kind() {
    local f=$1
    [ -s "$f" ] || { echo missing; return; }
    if [ "$(head -c 2 "$f" | od -An -tx1 | tr -d ' ')" = 1f8b ]; then echo pprof
    elif head -c 200 "$f" | grep -q '<svg\|<?xml'; then echo svg
    elif head -c 200 "$f" | grep -q '"\$schema".*speedscope\|speedscope'; then echo speedscope
    elif head -1 "$f" | grep -Eq '^[^ ].* -?[0-9.]+$'; then echo folded
    else echo other; fi
}
# refused VERB-LINE...: exit 2, one line naming the conflict, no file written ($out)
refused() {
    local what=$1 out=$2; shift 2
    rm -f "$out"
    local s; s=$(date +%s%N)
    "$@" >refused.out 2>refused.err; local rc=$?
    local ms=$(( ($(date +%s%N) - s) / 1000000 ))
    is "$rc" 2 "$what: exit 2"
    is "$(wc -l <refused.err)" 1 "$what: one line ($(head -c 200 refused.err))"
    check "$what: nothing written, at once (${ms} ms)" test ! -e "$out" -a "$ms" -lt 5000
}

printf 'main;a;b 5\nmain;a;c 3\nmain;d 2\n' >one.folded
printf 'main;a;b 2\nmain;a;c 6\nmain;d 2\n' >two.folded

# render: the extension decides (it wrote SVG into anything before)
for x in svg folded txt json pb.gz; do
    rm -f "r.$x"
    docker flame render one.folded -o "r.$x" 2>/dev/null
    want=$(case $x in svg) echo svg;; folded|txt) echo folded;; json) echo speedscope;; pb.gz) echo pprof;; esac)
    is "$(kind "r.$x")" "$want" "render -o r.$x writes $want"
done
refused "render --format folded -o r.svg" r.svg docker flame render --format folded one.folded -o r.svg
rm -f r2.out
docker flame render --format pprof one.folded -o r2.out 2>/dev/null
is "$(kind r2.out)" pprof "render --format pprof -o r2.out (no known extension): --format decides"

# merge
docker flame merge one.folded two.folded -o m.pb.gz 2>/dev/null
is "$(kind m.pb.gz)" pprof "merge -o m.pb.gz writes pprof"
docker flame merge one.folded two.folded -o m.txt 2>/dev/null
is "$(kind m.txt)" folded "merge -o m.txt writes folded"
refused "merge --format svg -o m.folded" m.folded docker flame merge --format svg one.folded two.folded -o m.folded

# diff
docker flame diff one.folded two.folded -o d.folded 2>/dev/null
is "$(kind d.folded)" folded "diff -o d.folded writes the two-column folded text"
docker flame diff one.folded two.folded -o d.pb.gz 2>/dev/null
is "$(kind d.pb.gz)" pprof "diff -o d.pb.gz writes pprof"
refused "diff --format folded -o d.svg" d.svg docker flame diff --format folded one.folded two.folded -o d.svg
rm -f diff.svg diff.folded
docker flame diff --format folded one.folded two.folded 2>/dev/null
is "$(kind diff.folded) $(kind diff.svg)" "folded missing" "diff --format folded without -o: diff.folded (not folded text in diff.svg)"
refused "diff -o d.json (speedscope has no differential)" d.json docker flame diff one.folded two.folded -o d.json

# show, from a store filled by store-gen
export DOCKER_FLAME_STORE=$TMP/p.db
"$GEN" --store "$DOCKER_FLAME_STORE" --container fmt-web --samples 50 --start -10m --windows 5 >/dev/null || bail "store-gen failed"
docker flame show fmt-web --since 1h -o s.folded 2>/dev/null
is "$(kind s.folded)" folded "show -o s.folded writes folded"
docker flame show fmt-web --since 1h -o s.pb.gz 2>/dev/null
is "$(kind s.pb.gz)" pprof "show -o s.pb.gz writes pprof"
refused "show --format svg -o s.json" s.json docker flame show fmt-web --since 1h --format svg -o s.json
refused "show --timeline -o t.folded (a picture)" t.folded docker flame show fmt-web --since 1h --timeline -o t.folded
unset DOCKER_FLAME_STORE

# the profile verb (conflicts are refused before any container is looked at)
fx=$(fixture pid1) || bail "fixture pid1 did not start"
refused "docker flame --format folded -o x.svg" x.svg docker flame "$fx" -d 1 --format folded -o x.svg
refused "docker flame --format svg --format pprof -o x.folded" x.folded docker flame "$fx" -d 1 --format svg --format pprof -o x.folded
for x in folded pb.gz; do
    $T docker flame "$fx" -d 1 -q -o "e.$x" 2>"e.$x.err"; rc=$?
    want=$(case $x in folded) echo folded;; pb.gz) echo pprof;; esac)
    is "$rc $(kind "e.$x")" "0 $want" "docker flame -o e.$x writes $want" || fdiag "$(cat "e.$x.err")"
done
$T docker flame "$fx" -d 1 -q --format svg --format folded -o both.svg 2>/dev/null
is "$(kind both.svg) $(kind both.folded)" "svg folded" "several formats, -o's extension among them: a stem, one file each"

# host (its own sidecar on every CPU of the engine's host)
refused "host --format folded -o h.svg" h.svg docker flame host -d 1 --format folded -o h.svg
refused "host --timeline t.folded (a picture)" t.folded docker flame host -d 1 -o h2.svg --timeline t.folded
$T docker flame host -d 1 -q -o h.pb.gz >/dev/null 2>h.err; rc=$?
is "$rc $(kind h.pb.gz)" "0 pprof" "host -o h.pb.gz writes pprof" || fdiag "$(cat h.err)"
$T docker flame host -d 1 -q --format pprof -o h2.out >/dev/null 2>/dev/null
is "$(kind h2.out)" pprof "host --format pprof (it had no pprof before)"

# top --record: the extension decides too (folded text went into rec.svg before)
$T docker flame top "$fx" --interval 1s --record rec.svg >snap.txt 2>top.err &
pid=$!
snapshots() { [ "$(top_snapshots snap.txt)" -ge "$1" ]; }
wait_until 120 snapshots 3 || nok "top printed three snapshots"
ctrl_c "$pid"
wait "$pid"
is "$(kind rec.svg)" svg "top --record rec.svg writes an SVG" || fdiag "$(cat top.err)"
done_testing
