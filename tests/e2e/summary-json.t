#!/usr/bin/env bash
# --summary-json on real runs: the profile verb on the fixture JVM (and on a missing container
# next to it), diff of two files, top with --record. Every document must be valid against
# docs/summary.schema.json (tests/schema_check.py) and say what the run did: samples = the
# folded file's total, the top method the stderr summary names, the files that exist, the JVM.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh" # wait_for, wait_pid, sidecars_left
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
ensure_fixture_image || bail "cannot build the fixture image"
ensure_sidecar_image || bail "cannot load the sidecar image (make)"
plugin_env
cd "$TMP"
T="timeout -k 10 150"
SCHEMA=$ROOT/docs/summary.schema.json
valid() { local out; out=$(python3 "$ROOT/tests/schema_check.py" "$SCHEMA" "$1" 2>&1); is "$out" "" "$2: valid against docs/summary.schema.json"; }
# jq-less field access: json FILE EXPR (python, EXPR on d)
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

fx=$(fixture pid1) || bail "fixture pid1 did not start"
name=$(docker inspect -f '{{.Name}}' "$fx"); name=${name#/}
mkdir out
$T docker flame -d 3 --format folded,pprof -o out/ --summary-json s.json "$fx" 2>err; rc=$?
is "$rc" 0 "profile with --summary-json: exit 0"
[ "$rc" = 0 ] || { fdiag "$(tail -20 err)"; bail "no profile"; }
valid s.json "profile summary"
c='d["containers"][0]'
is "$(json s.json "d['version'], d['kind'], d['exit_code'], d['error']")" "1 profile 0 None" "version 1, kind profile, exit 0, no error"
is "$(json s.json "$c['name'], $c['ok'], $c['image']")" "$name True flame-fixture-jvm:latest" "the container: name, ok, image"
folded=$(json s.json "[f['path'] for f in $c['files'] if f['format']=='folded'][0]")
check "files: the folded file exists ($folded)" test -s "$folded"
check "files: the pprof file exists" test -s "$(json s.json "[f['path'] for f in $c['files'] if f['format']=='pprof'][0]")"
total=$(awk '{n += $NF} END {print n}' "$folded")
is "$(json s.json "int($c['samples'])")" "$total" "samples = the folded file's total ($total)"
top=$(sed -n '/top Java methods/{n;p;q}' err | sed 's/^ *[0-9.]*% *//')
is "$(json s.json "$c['top_methods'][0]['name']")" "$top" "top method = the one stderr names ($top)"
like "$(json s.json "$c['top_methods'][0]['self_share']")" '^0\.[0-9]+$' "its share is a fraction"
is "$(json s.json "len($c['jvms']), $c['jvms'][0]['pid'], $c['jvms'][0]['names_via']")" "1 1 agent" "one JVM, pid 1, names via the agent"
like "$(json s.json "$c['jvms'][0]['java_version']")" '^17' "its Java version"
like "$(json s.json "$c['jit']['named_share']")" '^(1|0\.9[0-9]*)$' "JIT named share >= 0.9"
like "$(json s.json "d['timings_ms']['recording']")" '^[2-4][0-9]{3}$' "timings: ~3000 ms recording"
like "$(cat err)" 'wrote out/' "the stderr summary is still there"

# a missing container next to the fixture: the run fails before recording, the summary says so
$T docker flame -q -d 2 -o out/ --summary-json bad.json "$fx" no-such-container-$$ 2>bad.err; rc=$?
is "$rc" 3 "a missing container: exit 3"
valid bad.json "failed-run summary"
is "$(json bad.json "d['exit_code'], d['containers'][1]['ok'], d['containers'][1]['files']")" "3 False []" "exit 3, not ok, no files"
like "$(json bad.json "d['error']")" 'no such container' "the run's error"

# -q and stdout
$T docker flame -q -d 2 -o out/x.svg --summary-json - "$fx" > stdout.json 2>/dev/null; rc=$?
is "$rc" 0 "--summary-json - with -q: exit 0"
valid stdout.json "summary on stdout"
$T docker flame -d 1 -o - --summary-json - "$fx" >/dev/null 2>both.err; rc=$?
is "$rc" 2 "-o - and --summary-json -: usage error"

# diff of two files: movers as JSON, hostile names escaped
printf 'main;Old.m_[j] 60\nmain;Both.m_[j] 40\n' > before.folded
printf 'main;Both.m_[j] 30\nmain;New\001"</x>\xff.m_[j] 70\n' > after.folded
docker flame diff before.folded after.folded -o d.svg --summary-json d.json >/dev/null 2>&1; rc=$?
is "$rc" 0 "diff --summary-json: exit 0"
valid d.json "diff summary"
is "$(json d.json "d['movers']['grew'][0]['delta_pts'], d['movers']['shrank'][0]['name']")" "70 Old.m" "movers: what grew and shrank"
is "$(json d.json "ascii(d['movers']['grew'][0]['name'])")" "'New\\x01\"</x>\\ufffd.m'" "a hostile name: control escaped, invalid byte U+FFFD"
is "$(json d.json "[f['path'] for f in d['files']]")" "['d.svg', 'd.mirror.svg']" "files: the graph and its mirror"

# top: on exit, with --record
$T docker flame top --record rec.folded --summary-json top.json -i 1s "$fx" > top.out 2> top.err &
pid=$!
wait_for 'FlameFixture' top.out 120 || fdiag "top shows no fixture method: $(tail -5 top.err)"
ctrl_c "$pid"
wait_pid "$pid" 60
is "$RC" 0 "top --summary-json: exit 0 after Ctrl-C"
valid top.json "top summary"
is "$(json top.json "int(d['samples'])")" "$(awk '{n += $NF} END {print n}' rec.folded)" "top: samples = --record's total"
like "$(json top.json "d['top_methods'][0]['name']")" 'FlameFixture\.' "top: the fixture's method first"
is "$(json top.json "d['files'][0]['path'], d['jvms'][0]['pid']")" "rec.folded 1" "top: the record file, the JVM"
is "$(sidecars_left)" 0 "sidecars removed"
done_testing
