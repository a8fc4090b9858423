#!/usr/bin/env bash
# A real container profile as pprof: `docker flame FIXTURE --format pprof --format folded` on the
# fixture JVM, read by Go's `go tool pprof`: totals, top ten self counts and every stack equal
# the folded file written by the same run; labels (container, thread, pid), the period from -F,
# the recording's time and duration. Also `top --record X.pb.gz`.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh" # wait_for, wait_pid, sidecars_left
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
if ! have_go; then
    skip_or_fail "go tool pprof missing (apt-get install golang-go, or ./install.sh --deps-only --test-deps)"
    done_testing
fi
ensure_fixture_image || bail "cannot build the fixture image"
ensure_sidecar_image || bail "cannot load the sidecar image (make)"
plugin_env
go_env
cd "$TMP"
T="timeout -k 10 150"

fx=$(fixture pid1) || bail "fixture pid1 did not start"
name=$(docker inspect -f '{{.Name}}' "$fx"); name=${name#/}
$T docker flame -d 5 -F 199 --format pprof --format folded -o p "$fx" 2>err; rc=$?
is "$rc" 0 "docker flame --format pprof --format folded: exit 0"
[ "$rc" = 0 ] || { fdiag "$(tail -20 err)"; bail "no profile"; }
check "p.pb.gz and p.folded written" test -s p.pb.gz -a -s p.folded
like "$(cat err)" 'wrote .*p\.pb\.gz' "the summary names the pprof file"
pprof_matches p.folded p.pb.gz "container profile"
like "$PPROF_TOP" 'FlameFixture\.' "the hottest function is the fixture's Java method ($PPROF_TOP)"

raw=$(go tool pprof -raw p.pb.gz 2>&1)
like "$raw" 'Period: 5025126' "period: 1e9 / 199 Hz ns"
like "$raw" 'Duration: [4-6](s|\.[0-9])' "duration: the 5-s recording"
# time_nanos: the recording's start, within the last few minutes
now=$(date +%s)
t=$(printf '%s\n' "$raw" | sed -n 's/^Time: \(.*\) UTC$/\1/p')
ts=$(date -d "$t" +%s 2>/dev/null || echo 0)
check "time: the recording's start ($t)" test $((now - ts)) -ge 0 -a $((now - ts)) -lt 300
tags=$(go tool pprof -tags p.pb.gz 2>&1)
like "$tags" "container: Total" "label container"
like "$tags" "\(  100%\): $name\$" "... = $name on every sample"
like "$tags" 'thread: Total' "label thread"
like "$tags" 'pid: Total' "label pid (one JVM)"
# the thread label is the stack's first frame
first=$(awk '{print $NF "\t" $0}' p.folded | sort -t"$(printf '\t')" -k1,1nr | head -1 | cut -f2 | cut -d';' -f1)
like "$(go tool pprof -tags -tagfocus="thread=$first" p.pb.gz 2>&1)" "$first" "-tagfocus thread=$first selects that thread"

# top --record X.pb.gz writes pprof on exit
$T docker flame top --record rec.pb.gz -i 1s "$fx" > top.out 2> top.err &
pid=$!
wait_for 'FlameFixture' top.out 120 || fdiag "top shows no fixture method: $(tail -5 top.err)"
ctrl_c "$pid"
wait_pid "$pid" 60
is "$RC" 0 "top --record: exit 0 after Ctrl-C"
like "$(head -c 2 rec.pb.gz 2>/dev/null | od -An -tx1)" '1f 8b' "top --record rec.pb.gz: gzip"
like "$(go tool pprof -top -sample_index=samples rec.pb.gz 2>&1)" 'FlameFixture\.' "top --record: go tool pprof names the fixture's methods"
like "$(go tool pprof -tags rec.pb.gz 2>&1)" "\(  100%\): $name\$" "top --record: container label on every sample"
is "$(sidecars_left)" 0 "sidecars removed"
done_testing
