#!/usr/bin/env bash
# Hostile target: names and map files crafted against the flame graph and the sidecar.
#  - a real JVM running XssNames (tests/fixtures/hostile): its hot compiled method is named with
#    <script>, <img onerror>, ]]>, &, quotes, control bytes, invalid UTF-8 (surrogates in
#    modified UTF-8) and 2000 more bytes; profiled through the real plugin (`docker flame`);
#  - a fake JVM whose own map has overflowing/zero/absurd sizes, non-hex fields, overlaps, a
#    100 kB name and the name of its hot code carrying markup (also through the plugin);
#  - the same map made a 2 GB sparse file, and a 224 MB map of 9M valid lines (worst case for
#    the sidecar's memory);
#  - a process forking children that exit at once (pids reused, /proc entries vanishing, some
#    named java) while the sidecar scans.
# Required: the SVG parses as XML and runs nothing in headless chromium, bounded time and memory
# (VmHWM of the sidecar), W lines for what was dropped or refused, the target left running.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers (tests/run starts one)"
. "$(dirname "$0")/hostile-lib.sh"
plugin_env
CHECK_JS=$ROOT/tests/fixtures/hostile/svg-check.js
browser_ok() { command -v node >/dev/null && [ -x /usr/bin/chromium ] && [ -d "$ROOT/tests/browser/node_modules/playwright-core" ]; }

# svg_checks NAME SVG NEEDLE
svg_checks() {
    local name=$1 svg=$2 needle=$3
    check "$name: SVG written" test -s "$svg"
    check "$name: SVG parses as XML (xmllint --noout)" xmllint --noout "$svg"
    unlike "$(grep -c -aP '[\x00-\x08\x0b\x0c\x0e-\x1f]' "$svg")" '^[1-9]' "$name: no control bytes in the SVG"
    check "$name: the SVG is valid UTF-8" iconv -f UTF-8 -t UTF-8 -o /dev/null "$svg"
    unlike "$(grep -ao '<script[^>]*>' "$svg" | grep -v 'type="text/ecmascript"')" . "$name: no <script> element but the renderer's own"
    unlike "$(grep -aoi '<img' "$svg")" . "$name: no <img> element in the SVG (only escaped text)"
    if browser_ok; then
        local out; out=$(timeout 120 node "$CHECK_JS" "$svg" "$needle" 2>&1)
        while IFS= read -r l; do
            case "$l" in "ok "*) ok "$name: chromium: ${l#ok * - }" ;; "not ok "*) nok "$name: chromium: ${l#not ok * - }" ;; "#"*) diag "$l" ;; esac
        done <<<"$out"
        [[ "$out" == *"1.."* ]] || nok "$name: chromium check ran ($out)"
    else
        skip_or_fail "$name: headless chromium check (node, chromium, tests/browser/node_modules needed)"
    fi
}

# --- a real JVM whose hot method has a crafted name, through the plugin ---
fx=$(hstart "XssNames ready" "$J" -XX:+PreserveFramePointer -Xmx64m -XX:+UseSerialGC -cp /app XssNames) || bail "XssNames fixture"
before=$(tsnap "$fx")
t0=$(date +%s%N)
(cd "$TMP" && timeout 120 docker flame -d 5 -o xss.svg --format svg --format folded "$fx" 2>xss.err); rc=$?
diag "XssNames via plugin: $(( ($(date +%s%N) - t0) / 1000000 )) ms"
is "$rc" 0 "XssNames: docker flame exit 0"
like "$(cat "$TMP/xss.folded")" 'Xss<script>pwned=2' "XssNames: the crafted name reached the profile"
svg_checks XssNames "$TMP/xss.svg" '<script>pwned=2'
untouched "$fx" "$before" "XssNames"
docker rm -f "$fx" >/dev/null

# --- a fake JVM with a crafted map, through the plugin ---
fx=$(hstart "fakejvm ready" /hostile fakejvm ok) || bail "fakejvm ok"
(cd "$TMP" && timeout 120 docker flame -d 3 -o fake.svg --format svg --format folded "$fx" 2>fake.err); rc=$?
is "$rc" 0 "crafted map: docker flame exit 0"
like "$(cat "$TMP/fake.err")" 'map of pid 1: 5 malformed or overlapping lines dropped' "crafted map: a warning counts the dropped lines (overflow, zero, absurd, not hex, 100 kB name)"
like "$(cat "$TMP/fake.folded")" 'Evil<script>' "crafted map: the crafted name reached the profile"
like "$(cat "$TMP/fake.err")" 'pid 1: interpreted Java frames stay `Interpreter`: no executable libjvm.so mapping' \
    "a fake JVM: interpreted frames left unnamed, one warning saying why"
svg_checks "crafted map" "$TMP/fake.svg" '<script>document'
docker rm -f "$fx" >/dev/null

# --- 2 GB sparse map: refused before copying ---
fx=$(hstart "fakejvm ready" /hostile fakejvm ok big) || bail "fakejvm big"
o=$TMP/big.out
hsidecar "$fx" "$o" --duration 2; rc=$?
diag "2 GB map: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB, finish $(sfield "$o" finish) ms"
common "$o" "2 GB map" 0 "$rc"
like "$(grep -a '^W' "$o")" 'perf-1\.[0-9a-f]{16}\.map in the target refused: larger than 256 MiB' "2 GB map: W says it was refused for its size"
check "2 GB map: refused without copying it (finish $(sfield "$o" finish) ms < 2000)" test "$(sfield "$o" finish)" -lt 2000
docker rm -f "$fx" >/dev/null

# --- 224 MB map of 9M valid lines: the sidecar's worst case ---
HTIMEOUT=120
fx=$(HTIMEOUT=120 hstart "fakejvm ready" /hostile fakejvm ok huge) || bail "fakejvm huge"
o=$TMP/huge.out
hsidecar "$fx" "$o" --duration 2; rc=$?
diag "224 MB map: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB, $(sed -n 's/^S //p' "$o" | grep -o '"map_lines":[0-9]*\|"sanitize":[0-9]*\|"script":[0-9]*' | tr '\n' ' ')"
common "$o" "224 MB map" 0 "$rc"
is "$(sfield "$o" map_lines)" 2097152 "224 MB map: index bounded at 2M entries"
like "$(grep -a '^W' "$o")" 'map of pid 1: [0-9]+ malformed or overlapping lines dropped' "224 MB map: W counts what was dropped"
like "$(grep -a '^F' "$o")" 'Evil<script>' "224 MB map: the hot code is still named"
docker rm -f "$fx" >/dev/null

# --- processes exiting and pids reused during the scan ---
for i in 1 2 3; do
    fx=$(hstart "churn ready" /init "$J" "${JOPTS[@]}" --- /hostile churn) || { nok "churn $i: fixture"; continue; }
    timeout 30 sh -c "until docker logs $fx 2>&1 | grep -q 'FlameFixture ready'; do sleep 0.1; done"
    o=$TMP/churn$i.out
    hsidecar "$fx" "$o" --duration 2; rc=$?
    diag "churn $i: ${ELAPSED_MS} ms, VmHWM ${HWM_KB} kB"
    common "$o" "churn $i" 0 "$rc"
    is "$(grep -ac '^J' "$o")" 1 "churn $i: exactly the one JVM found"
    like "$(grep -a '^F' "$o")" 'FlameFixture\.' "churn $i: profiled with Java names"
    is "$(docker inspect -f '{{.State.Running}}' "$fx")" true "churn $i: the target still runs"
    docker rm -f "$fx" >/dev/null
done
diag "worst sidecar VmHWM in this file: ${HWM_MAX} kB"
done_testing
