#!/usr/bin/env bash
# The plugin's whole flow against the real engine with a stub sidecar (canned protocol stream,
# tests/fixtures/plugin-stub): image import, outputs in three formats, JVM/attach errors, a
# second engine endpoint (-H and a named context), `-- CMD`, Ctrl-C / SIGTERM, several
# containers. The real sidecar is exercised by plugin-real.t.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
ensure_fixture_image || bail "cannot build the fixture image"
plugin_env
stub_env || bail "cannot build the stub sidecar"
docker rmi -f "$DOCKER_FLAME_SIDECAR_IMAGE" >/dev/null 2>&1
cd "$TMP"

fx=$(fixture pid1) || bail "fixture pid1 did not start"

# --- outputs, image import
mkdir -p out
docker flame -d 1 --format svg --format folded --format speedscope -o out/p.svg "$fx" 2>err; rc=$?
is "$rc" 0 "profile: exit 0"
like "$(cat err)" "loaded the sidecar image $DOCKER_FLAME_SIDECAR_IMAGE" "missing image imported from the tarball"
check "SVG written" test -s out/p.svg
like "$(cat out/p.svg)" 'FlameFixture.countPrimes' "SVG names the Java methods"
like "$(head -c 300 out/p.svg)" '<svg' "SVG is an SVG"
like "$(cat out/p.folded)" '^java;FlameFixture.main;FlameFixture.countPrimes_\[j\];FlameFixture.isPrime_\[i\] [0-9]+' "folded output"
check "speedscope output is JSON with the speedscope schema" python3 -c "import json,sys; d=json.load(open('out/p.speedscope.json')); sys.exit(0 if 'speedscope' in d.get('\$schema','') else 1)"
is "$(ls -A out | sort | tr '\n' ' ')" "p.folded p.speedscope.json p.svg " "no temp files left next to the outputs"
like "$(cat err)" 'samples, 100% of [0-9,]+ JIT samples have Java names' "summary: samples and named share"
like "$(cat err)" 'top Java methods \(self time\):' "summary: top methods"
like "$(cat err)" 'wrote out/p.svg' "summary: output path"
like "$(cat err)" 'warning: stub warning: canned profile' "summary: sidecar warnings"
is "$(sidecars_left)" 0 "profile: sidecar removed"

# default name
docker flame -q -d 1 "$fx" 2>err; rc=$?
is "$rc" 0 "-q: exit 0"
is "$(cat err)" "" "-q: silent"
name=$(docker inspect -f '{{.Name}}' "$fx"); name=${name#/}
check "default output name flame-<container>-<time>.svg ($(ls flame-* | tr '\n' ' '))" bash -c "ls flame-$name-[0-9]*-[0-9]*.svg"

# --- errors from the sidecar
nj=$(fixture nojvm) || bail "fixture nojvm did not start"
out=$(docker flame -d 1 "$nj" 2>&1); rc=$?
is "$rc" 4 "no JVM: exit 4"
like "$out" "^docker flame: no JVM in container .*: no Java process found; processes: 1 /init --pause" "no JVM: names what it found"
is "$(sidecars_left)" 0 "no JVM: sidecar removed"
na=$(fixture noattach) || bail "fixture noattach did not start"
out=$(docker flame -d 1 "$na" 2>&1); rc=$?
is "$rc" 5 "attach refused: exit 5"
like "$out" 'refused the attach: .*DisableAttachMechanism' "attach refused: message"
is "$(ls flame-* 2>/dev/null | grep -vc "^flame-$name-")" 0 "no output for failed runs"

# --- a second endpoint to the same engine: -H and a named context
python3 "$STUB_DIR/forward.py" "$TMP/second.sock" > fwd.log 2>&1 &
fwd=$!
wait_for '^ready' fwd.log 10 || bail "forwarder did not start"
docker -H "unix://$TMP/second.sock" flame -q -d 1 -o h.svg "$fx"; rc=$?
is "$rc" 0 "-H unix:///second.sock: exit 0"
check "-H: SVG written" test -s h.svg
n1=$(grep -c conn fwd.log)
check "-H: requests went through the second socket" test "$n1" -gt 3
docker context create flame-second --docker "host=unix://$TMP/second.sock" >/dev/null 2>&1
docker --context flame-second flame -q -d 1 -o ctx.svg "$fx"; rc=$?
is "$rc" 0 "--context: exit 0"
check "--context: SVG written" test -s ctx.svg
check "--context: requests went through the second socket" test "$(grep -c conn fwd.log)" -gt "$n1"
DOCKER_CONTEXT=flame-second docker flame -q -d 1 -o ctx2.svg "$fx"; rc=$?
is "$rc" 0 "DOCKER_CONTEXT: exit 0"
kill "$fwd"; wait "$fwd" 2>/dev/null
out=$(docker --context flame-second flame -d 1 "$fx" 2>&1); rc=$?
is "$rc" 125 "context endpoint down: exit 125"
like "$out" "cannot connect to the Docker daemon at unix://$TMP/second.sock \(context \"flame-second\"\)" "context endpoint down: message"

# --- the dial-stdio transport (what ssh:// endpoints use), forced onto the local engine
DOCKER_FLAME_DIAL_STDIO=1 docker flame -q -d 1 -o dial.svg "$fx"; rc=$?
is "$rc" 0 "dial-stdio transport: exit 0"
check "dial-stdio: SVG written" test -s dial.svg
is "$(ls -d /tmp/docker-flame-dial-* 2>/dev/null | wc -l)" 0 "dial-stdio: private socket dir removed"

# --- -- CMD: recording stops when the command exits
start=$(date +%s%N)
docker flame -o cmd.svg "$fx" -- sh -c 'sleep 1' 2>err; rc=$?
el=$(( ($(date +%s%N) - start) / 1000000 ))
is "$rc" 0 "-- CMD: exit 0"
check "-- CMD: SVG written" test -s cmd.svg
check "-- CMD: stopped soon after the command (${el} ms, no -d)" test "$el" -lt 15000
like "$(cat err)" 'sh exited: stopping the recording' "-- CMD: says why it stopped"
docker flame -o cmdfail.svg "$fx" -- sh -c 'exit 3' 2>err; rc=$?
is "$rc" 1 "-- failing CMD: exit 1"
like "$(cat err)" 'sh failed: exit status 3' "-- failing CMD: reported in the summary"
check "-- failing CMD: profile still written" test -s cmdfail.svg

# --- Ctrl-C: first stops early and still writes; SIGTERM aborts
docker flame -d 0 -o int.svg "$fx" 2>int.err &
pid=$!
wait_for 'recording' int.err 30 || diag "$(cat int.err)"
ctrl_c "$pid"
wait_pid "$pid" 60; rc=$RC
is "$rc" 0 "Ctrl-C mid-recording: exit 0"
check "Ctrl-C mid-recording: partial SVG written" test -s int.svg
like "$(cat int.err)" 'stopping early' "Ctrl-C: says it stops early"
is "$(sidecars_left)" 0 "Ctrl-C: sidecar removed"

docker flame -d 0 -o term.svg "$fx" 2>term.err &
pid=$!
wait_for 'recording' term.err 30
kill -TERM "$(plugin_pid "$pid")"
wait_pid "$pid" 60; rc=$RC
is "$rc" 130 "SIGTERM: abort, exit 130"
check "SIGTERM: no SVG" test ! -e term.svg
is "$(sidecars_left)" 0 "SIGTERM: sidecar removed"

# second Ctrl-C (as a terminal delivers it: SIGINT to the plugin) during the sidecar's
# post-processing (the slow fixture makes it take 10 s)
sl=$(fixture slow) || bail "fixture slow did not start"
docker flame -d 0 -o twice.svg "$sl" 2>twice.err &
pid=$!
wait_for 'recording' twice.err 30
pp=$(plugin_pid "$pid")
kill -INT "$pp"
wait_for 'stopping early' twice.err 10
wait_for 'processing' twice.err 10
# events closer than 0.25 s count as one interrupt (a CLI may deliver one Ctrl-C twice: SIGINT
# and the socket close), so a second Ctrl-C is a separate press only after that gap
sleep 0.5
kill -INT "$pp"
wait_pid "$pid" 60; rc=$RC
is "$rc" 130 "second Ctrl-C: abort, exit 130"
like "$(cat twice.err)" 'aborting' "second Ctrl-C: says it aborts"
check "second Ctrl-C: no SVG" test ! -e twice.svg
is "$(ls -A | grep -c '^\.twice')" 0 "second Ctrl-C: no temp file"
is "$(sidecars_left)" 0 "second Ctrl-C: sidecar removed"

# Ctrl-C while the sidecar starts
docker flame -d 0 -o early.svg "$fx" 2>early.err &
pid=$!
wait_for 'starting|recording' early.err 30
ctrl_c "$pid"
wait_pid "$pid" 60; rc=$RC
like "$rc" '^(0|130)$' "Ctrl-C at start: clean exit ($rc)"
is "$(sidecars_left)" 0 "Ctrl-C at start: sidecar removed"

# --- several containers at once, one output each
fx2=$(fixture notpid1) || bail "fixture notpid1 did not start"
mkdir -p multi
# one container alone first: what a 2-s profile costs here besides its 2 s (sidecar start and
# removal: ~0.3 s on one machine, ~2 s on a slower one under the suite's load)
start=$(date +%s%N)
docker flame -d 2 -o alone.svg "$fx" 2>err; rc=$?
el1=$(( ($(date +%s%N) - start) / 1000000 ))
is "$rc" 0 "one container: exit 0"
start=$(date +%s%N)
docker flame -d 2 -o multi/ "$fx" "$fx2" 2>err; rc=$?
el=$(( ($(date +%s%N) - start) / 1000000 ))
is "$rc" 0 "two containers: exit 0"
is "$(ls multi/*.svg | wc -l)" 2 "two containers: two SVGs"
# one after the other, the two would take the one's time twice (its 2 s and its overhead
# again); at the same time, the one's and a little more: less than 3/4 of the one's more
# (here 1.1 s more against 3.4 s alone; an absolute bound, < 4 s, failed on a slower machine
# at 4,031 ms while the two ran together)
check "two containers: profiled at the same time (${el} ms, one alone ${el1} ms)" \
    test $((4 * (el - el1))) -lt $((3 * el1))
out=$(docker flame -d 1 -o one.svg "$fx" "$fx2" 2>&1); rc=$?
is "$rc" 2 "-o FILE with two containers: usage error"
is "$(sidecars_left)" 0 "nothing left behind"
done_testing
