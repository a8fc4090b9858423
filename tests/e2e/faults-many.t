#!/usr/bin/env bash
# Load, short: 8 fixture JVMs profiled at once by one `docker flame` (-d 3) with the real
# sidecar: exit 0, 8 SVGs naming the Java methods, 8 summaries, the plugin's peak RSS bounded
# (/usr/bin/time -v, < 64 MB for the CLI + plugin tree), every sidecar removed, every JVM alive,
# no mount left. Then Ctrl-C of the same 8 mid-recording: 8 partial profiles, exit 0.
# (bench/bench-load.sh measures the same at -d 10 plus the sidecars' memory.)
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/fixtures/plugin-stub/lib.sh"
real_plugin_setup
N=8
fx=()
for ((i = 0; i < N; i++)); do
    c=$(fixture pid1) || bail "fixture $i did not start"
    fx+=("$c")
done
mkdir -p out int
/usr/bin/time -v -o time.txt timeout -k 10 240 docker flame -d 3 -o out/ "${fx[@]}" 2>err; rc=$?
is "$rc" 0 "$N containers at once: exit 0" || diag "$(tail -20 err)"
is "$(ls out/*.svg 2>/dev/null | wc -l)" "$N" "$N SVGs written"
named=0
for f in out/*.svg; do grep -q 'FlameFixture\.countPrimes' "$f" && named=$((named + 1)); done
is "$named" "$N" "every SVG names FlameFixture.countPrimes"
is "$(grep -c 'JIT samples have Java names' err)" "$N" "$N summaries"
rss=$(sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' time.txt)
diag "peak RSS of docker CLI + plugin: ${rss} kB; wall $(sed -n 's/.*Elapsed (wall clock) time.*: //p' time.txt)"
check "peak RSS bounded (${rss} kB < 65536)" test "${rss:-999999}" -lt 65536
is "$(sidecars_left)" 0 "every sidecar removed"
alive=0; mounts=0
for c in "${fx[@]}"; do
    [ "$(docker inspect -f '{{.State.Running}}' "$c")" = true ] && alive=$((alive + 1))
    mounts=$((mounts + $(flame_mounts "$(host_pid "$c")")))
done
is "$alive" "$N" "every JVM still runs"
is "$mounts" 0 "no docker-flame mount in any target"

# Ctrl-C (SIGINT to the plugin process) once all $N record
timeout -k 10 240 docker flame -d 0 -o int/ "${fx[@]}" 2>int.err &
bg=$!
pp=$(plugin_under "$bg")
# an event: a progress line where all $N containers record and have samples
all_rec() { awk -v n="$N" '{ c = gsub(/recording [^|]*, [1-9][0-9,]* samples/, "&"); if (c >= n) f = 1 } END { exit !f }' int.err; }
ok_rec=0
for ((i = 0; i < 1200; i++)); do all_rec && { ok_rec=1; break; }; sleep 0.1; done
is "$ok_rec" 1 "all $N record with samples (bounded 120 s)"
kill -INT "$pp"
wait_pid "$bg" 180
is "$RC" 0 "Ctrl-C of $N: exit 0" || diag "$(cat int.err)"
is "$(ls int/*.svg 2>/dev/null | wc -l)" "$N" "Ctrl-C of $N: $N partial SVGs"
is "$(sidecars_left)" 0 "Ctrl-C of $N: every sidecar removed"
done_testing
