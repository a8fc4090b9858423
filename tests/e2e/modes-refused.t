#!/usr/bin/env bash
# Modes the target refuses, and the target attacking the agent's samples file (docs/MODES.md),
# through the real plugin, sidecar and agent on the `modes` fixture (java/ModesFixture.java):
# - two profiles of one JVM at once: the first holds the JVM's allocation sampler (a JVMTI
#   capability one agent at a time may hold), so the second's alloc is refused: one line naming
#   the mode and why, exit 6 ("not permitted"), its cpu and lock files still written, and its
#   --summary-json says which JVM refused what; the first's --summary-json lists the files of
#   every mode (cpu, alloc, lock), each with its mode, each on disk;
# - the target plants a symlink (to a file of the JVM's user), a FIFO or a 300 MiB file at
#   /tmp/perf-<pid>.<tag>.modes, where the agent writes its samples at stop: nothing follows the
#   link (its target unchanged), nothing hangs on the FIFO, the big file is refused for its size
#   before it is read; one line, exit 6; the JVM runs on;
# - `--mode lock` alone on a JVM where nothing waits: one line saying so (not "is the JVM
#   busy?"), exit 1, no file;
# - `host --mode alloc`: refused before anything starts, one line, exit 2.
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 120"

fx=$(fixture modes) || bail "fixture modes did not start"
hp=$(target_pid "$fx") || bail "no pid for the fixture"
nspid=$(docker logs "$fx" 2>&1 | sed -n 's/.*ModesFixture ready pid=\([0-9]*\).*/\1/p' | head -1)
[ -n "$nspid" ] || bail "the fixture did not say its pid"
jpid=$(pgrep -f ModesFixture | while read -r p; do [ "$(readlink "/proc/$p/ns/pid")" = "$(readlink "/proc/$hp/ns/pid")" ] && echo "$p"; done | head -1)
juid=$(stat -c %u "/proc/${jpid:-$hp}") jgid=$(stat -c %g "/proc/${jpid:-$hp}")
tmpd=/proc/$hp/root/tmp
tag=$(agent_stable_tag)
# a JSON value of a summary: jq-like paths are python's
js() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# ---- two profiles at once: the second one's alloc is refused ----
mkdir -p a b
$T docker flame -d 10 --mode cpu,alloc,lock --format svg,folded -o a/ --summary-json a.json "$fx" 2>a.err &
apid=$!
# the first one's sidecar records: its agent started, the sampler is its own from then on
check "first profile: recording (its agent holds the sampler)" wait_until 90 sidecar_recording
$T docker flame -q -d 2 --mode cpu,alloc,lock -o b/ --summary-json b.json "$fx" 2>b.err; rc=$?
is "$rc" 6 "second profile while the first holds the allocation sampler: exit 6"
like "$(cat b.err)" "^docker flame: [^ ]+: --mode alloc refused in JVM pid $nspid: the JVM's allocation sampler is held by another agent" \
    "second profile: one line says alloc was refused, in which JVM and why"
is "$(wc -l <b.err)" 1 "second profile: that one line only (-q)"
check "second profile: cpu and lock files written" test -s "$(ls b/*.cpu.svg 2>/dev/null | head -1)" -a -s "$(ls b/*.lock.svg 2>/dev/null | head -1)"
is "$(ls b | grep -c alloc)" 0 "second profile: no alloc file (an empty graph would say nothing)"
is "$(js b.json 'd["containers"][0]["jvms"][0].get("refused")')" "['alloc']" "second profile: --summary-json: the JVM refused alloc"
like "$(js b.json 'd["containers"][0]["jvms"][0].get("refused_why")')" 'held by another agent' "second profile: --summary-json: why"
is "$(js b.json 'sorted(set(f["mode"] for f in d["containers"][0]["files"]))')" "['cpu', 'lock']" \
    "second profile: --summary-json lists the cpu and the lock file"
is "$(js b.json 'd["exit_code"]')" 6 "second profile: --summary-json: exit_code 6"
wait "$apid"; rc=$?
is "$rc" 0 "first profile: exit 0"
[ "$rc" = 0 ] || fdiag "$(tail -5 a.err)"
is "$(js a.json 'sorted(f["mode"] + "." + f["format"] for f in d["containers"][0]["files"])')" \
    "['alloc.folded', 'alloc.svg', 'cpu.folded', 'cpu.svg', 'lock.folded', 'lock.svg']" \
    "first profile: --summary-json lists the files of every mode, each with its mode"
missing=$(js a.json '" ".join(f["path"] for f in d["containers"][0]["files"])' | tr ' ' '\n' | while read -r f; do [ -s "$f" ] || echo "$f"; done)
is "$missing" "" "first profile: every file --summary-json lists is on disk"
like "$(js a.json '[f["path"] for f in d["containers"][0]["files"] if f["mode"] == "alloc"]')" '\.alloc\.(svg|folded)' \
    "first profile: the alloc files are the .alloc. ones"
if [ -f "$ROOT/tests/schema_check.py" ]; then
    check "both summaries valid against docs/summary.schema.json" \
        sh -c "python3 '$ROOT/tests/schema_check.py' '$ROOT/docs/summary.schema.json' a.json && python3 '$ROOT/tests/schema_check.py' '$ROOT/docs/summary.schema.json' b.json"
fi
# both capabilities went back: a third profile gets the sampler
$T docker flame -q -d 1 --mode alloc -o c.folded "$fx" 2>c.err; rc=$?
is "$rc" 0 "after both: an alloc profile gets the sampler again (exit 0)"
[ "$rc" = 0 ] || fdiag "$(cat c.err)"

# ---- the target plants something where the agent's samples go ----
modes_name=perf-$nspid.$tag.modes
# plant KIND: as the JVM's user could (owned by it), at the agent's samples name
plant() {
    rm -f "$tmpd/$modes_name"
    case "$1" in
    link) printf 'victim\n' >"$tmpd/victim" && chown "$juid:$jgid" "$tmpd/victim" &&
          ln -s /tmp/victim "$tmpd/$modes_name" && chown -h "$juid:$jgid" "$tmpd/$modes_name" ;;
    fifo) mkfifo -m 0600 "$tmpd/$modes_name" && chown "$juid:$jgid" "$tmpd/$modes_name" ;;
    big)  truncate -s 300M "$tmpd/$modes_name" && chown "$juid:$jgid" "$tmpd/$modes_name" &&
          chmod 0400 "$tmpd/$modes_name" ;; # the agent cannot truncate it; the sidecar could read it
    esac
}
hostile() { # KIND REASON
    local kind=$1 why=$2
    plant "$kind" || { nok "$kind: planted"; return; }
    $T docker flame -q -d 1 --mode alloc -o "h-$kind.folded" "$fx" 2>"h-$kind.err"; rc=$?
    is "$rc" 6 "planted $kind at /tmp/$modes_name: exit 6"
    like "$(cat "h-$kind.err")" "--mode alloc refused in JVM pid $nspid: .*perf-$nspid\.$tag\.modes.*: $why" \
        "planted $kind: one line says the samples file was refused ($why)"
    is "$(wc -l <"h-$kind.err")" 1 "planted $kind: one line"
    is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "planted $kind: the JVM runs on"
    if [ "$kind" = big ]; then # a regular file of the JVM's user: removed, as the map would be
        check "planted big: removed (a regular file of the JVM's user under our name)" test ! -e "$tmpd/$modes_name"
    else
        check "planted $kind: left as planted (not removed, not replaced)" test -e "$tmpd/$modes_name" -o -L "$tmpd/$modes_name"
    fi
}
hostile link 'a symlink \(not followed\)'
is "$(cat "$tmpd/victim")" victim "planted link: the file it points to is unchanged (the agent did not write through it)"
is "$(readlink "$tmpd/$modes_name")" /tmp/victim "planted link: still the target's link"
hostile fifo 'not a regular file'
hostile big 'larger than 256 MiB'
rm -f "$tmpd/$modes_name" "$tmpd/victim"
# an ordinary profile afterwards, with nothing planted: the JVM's attach listener did not hang
# on the FIFO (the agent opens it O_NONBLOCK)
$T docker flame -q -d 1 --mode alloc -o after.folded "$fx" 2>after.err; rc=$?
is "$rc" 0 "nothing planted any more: an alloc profile works (exit 0)"
is "$(target_tmp "$fx" | grep -c 'perf-')" 0 "the target's /tmp has no map or samples file of ours left"
docker rm -f "$fx" >/dev/null

# ---- --mode lock alone on a JVM whose threads never wait for a lock ----
# (the plain fixture: one computing thread). Nothing to write is an error as ever, but its
# line says why for this mode, not "is the JVM busy?" (it is)
fx=$(fixture pid1) || bail "fixture pid1 did not start"
mkdir -p nolock
$T docker flame -q -d 1 --mode lock -o nolock/ "$fx" 2>nolock.err; rc=$?
is "$rc" 1 "--mode lock, nothing contended: exit 1 (nothing written)"
like "$(cat nolock.err)" '--mode lock: nothing recorded \(no thread waited for a monitor or a lock\)' \
    "--mode lock, nothing contended: the line says no thread waited"
is "$(wc -l <nolock.err)" 1 "--mode lock, nothing contended: one line"
is "$(ls nolock | wc -l)" 0 "--mode lock, nothing contended: no file"
docker rm -f "$fx" >/dev/null

# ---- host records cpu only ----
out=$($T docker flame host -d 1 --mode alloc 2>&1); rc=$?
is "$rc" 2 "host --mode alloc: exit 2"
like "$out" 'not supported by `docker flame host`' "host --mode alloc: says host does not record it"
is "$(printf '%s\n' "$out" | wc -l)" 1 "host --mode alloc: one line"
no_sidecar_left
done_testing
