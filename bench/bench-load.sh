#!/usr/bin/env bash
# bench-load: docker-flame under load, with the real sidecar on fixture JVMs (docs/HARDENING.md).
#  1. N (8) fixture containers profiled at once by ONE `docker flame` command: wall time, peak RSS
#     of the plugin (/usr/bin/time -v), peak VmHWM of every sidecar process (flame-sidecar, perf
#     record, perf script), samples per container.
#  2. A long profile: the sample count of 30 min at 99 Hz (178,200 per busy CPU) at a higher
#     frequency (-F $LONG_HZ for $LONG_S s), with the same memory figures, sampled every 0.5 s so
#     growth over time would show.
# Prints figures; not pass/fail. Needs the engine, build/flame-sidecar.tar, the fixture image.
# LOAD_N, LONG_HZ, LONG_S override; LOAD_SKIP_LONG=1 runs only part 1.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
. "$ROOT/tests/e2e/lib.sh"
N=${LOAD_N:-8}
LONG_HZ=${LONG_HZ:-2000}
LONG_S=${LONG_S:-94}
docker info >/dev/null 2>&1 || { echo "bench-load: no Docker engine answers: skipped"; exit 0; }
[ -f "$BUILD/flame-sidecar.tar" ] || { echo "bench-load: build/flame-sidecar.tar missing (make): skipped"; exit 0; }
ensure_fixture_image || { echo "bench-load: cannot build the fixture image"; exit 1; }
ensure_sidecar_image || { echo "bench-load: cannot import the sidecar image"; exit 1; }
plugin_env
unset DOCKER_FLAME_SIDECAR_IMAGE DOCKER_FLAME_SIDECAR_TAR DOCKER_FLAME_SIDECAR_CAPS DOCKER_FLAME_SIDECAR_TEST_STOP
cd "$TMP"

# mem_poll OUT: until killed, every 0.5 s: peak VmHWM (kB) per process of this run's sidecars,
# found through their containers' cgroup; writes "t_s total_rss_kB max_hwm_kB" lines + a summary.
cat > poll.py <<'PY'
import os, sys, time, subprocess, signal
owner, out = sys.argv[1], sys.argv[2]
peak = {}          # (pid, comm) -> VmHWM kB
tmpfs = {}         # sidecar pid -> max size of its /tmp/perf.data, kB
ids, last_ids, t0 = [], 0, time.time()
stop = False
def on_term(*_):
    global stop; stop = True
signal.signal(signal.SIGTERM, on_term)
f = open(out, "w")
while not stop:
    now = time.time()
    if now - last_ids > 1:
        try:
            ids = subprocess.run(["docker", "ps", "-q", "--no-trunc", "--filter", "label=com.docker-flame.sidecar=1",
                                  "--filter", "label=docker-flame-test.owner=" + owner],
                                 capture_output=True, text=True, timeout=10).stdout.split()
        except Exception:
            pass
        last_ids = now
    total = 0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            comm0 = open(f"/proc/{p}/comm").read().strip()
            if comm0 == "docker-flame":   # the plugin of this run (our env), not others'
                if ("FLAME_TEST_OWNER=" + owner).encode() not in open(f"/proc/{p}/environ", "rb").read():
                    continue
            else:
                cg = open(f"/proc/{p}/cgroup").read()
                if not any(i in cg for i in ids):
                    continue
            st = open(f"/proc/{p}/status").read()
        except OSError:
            continue
        kv = dict(l.split(":", 1) for l in st.splitlines() if ":" in l)
        comm = kv.get("Name", "?").strip()
        hwm = int(kv.get("VmHWM", "0 kB").split()[0]); rss = int(kv.get("VmRSS", "0 kB").split()[0])
        cmd = open(f"/proc/{p}/cmdline", "rb").read().split(b"\0")
        if comm == "perf" and len(cmd) > 1:
            comm = "perf " + cmd[1].decode(errors="replace")
        peak[(p, comm)] = max(peak.get((p, comm), 0), hwm)
        if comm == "flame-sidecar":   # perf.data lives in the sidecar's /tmp tmpfs (memory too)
            try:
                tmpfs[p] = max(tmpfs.get(p, 0), os.stat(f"/proc/{p}/root/tmp/perf.data").st_size // 1024)
            except OSError:
                pass
        if comm != "docker-flame":
            total += rss
    f.write(f"{now - t0:.1f} {total} {max(peak.values()) if peak else 0}\n"); f.flush()
    time.sleep(0.5)
by = {}
for (p, comm), h in peak.items():
    by.setdefault(comm, []).append(h)
for comm, hs in sorted(by.items()):
    f.write(f"# {'plugin' if comm == 'docker-flame' else 'sidecar'} {comm}: {len(hs)} processes, peak VmHWM max {max(hs)} kB, mean {sum(hs)//len(hs)} kB\n")
if tmpfs:
    f.write(f"# sidecar /tmp/perf.data (tmpfs, counts as memory): max {max(tmpfs.values())} kB, summed {sum(tmpfs.values())} kB\n")
f.close()
PY
poll_start() { python3 poll.py "$FLAME_TEST_OWNER" "$1" & POLL=$!; }
poll_stop() { kill -TERM "$POLL" 2>/dev/null; wait "$POLL" 2>/dev/null; }
plugin_rss() { sed -n 's/^[[:space:]]*Maximum resident set size (kbytes): //p' "$1"; }
samples() { sed -n 's/^\([^ ]*\): \([0-9]*\) samples,.*/\1 \2/p' "$1"; }

echo "== 1. $N containers at once, one command (-d 10, 99 Hz)"
fx=()
for ((i = 0; i < N; i++)); do
    c=$(fixture pid1) || { echo "fixture $i did not start"; exit 1; }
    fx+=("$c")
done
# warm-up: the agent is loaded once per JVM (first-run cost is not the steady state)
timeout -k 10 300 docker flame -q -d 1 -o warm/ "${fx[@]}" >/dev/null 2>&1 || mkdir -p warm
mkdir -p many
poll_start mem-many.txt
s=$(date +%s%N)
/usr/bin/time -v -o time-many.txt timeout -k 10 300 docker flame -d 10 -o many/ "${fx[@]}" 2>many.err; rc=$?
wall=$(( ($(date +%s%N) - s) / 1000000 ))
poll_stop
echo "exit $rc, wall ${wall} ms, $(ls many/*.svg 2>/dev/null | wc -l)/$N SVGs"
echo "plugin (docker CLI + docker-flame) peak RSS: $(plugin_rss time-many.txt) kB (/usr/bin/time -v: the largest process of the tree, the Go CLI)"
grep '^#' mem-many.txt | sed 's/^# //'
echo "sidecars' summed RSS, max over the run: $(awk '!/^#/ && $2 > m {m = $2} END {print m+0}' mem-many.txt) kB"
echo "samples per container: $(samples many.err | awk '{printf "%s ", $2}')"
[ "$rc" = 0 ] || tail -5 many.err
docker rm -f "${fx[@]}" >/dev/null 2>&1

if [ "${LOAD_SKIP_LONG:-0}" = 1 ]; then exit 0; fi
echo "== 2. long profile: -F $LONG_HZ for ${LONG_S} s (30 min at 99 Hz = 178200 samples per busy CPU)"
lf=$(fixture pid1) || { echo "fixture did not start"; exit 1; }
timeout -k 10 120 docker flame -q -d 1 -o warm.svg "$lf" >/dev/null 2>&1
poll_start mem-long.txt
s=$(date +%s%N)
/usr/bin/time -v -o time-long.txt timeout -k 10 $((LONG_S + 300)) docker flame -F "$LONG_HZ" -d "$LONG_S" -o long.svg "$lf" 2>long.err; rc=$?
wall=$(( ($(date +%s%N) - s) / 1000000 ))
poll_stop
echo "exit $rc, wall ${wall} ms, SVG $(stat -c %s long.svg 2>/dev/null || echo 0) bytes"
echo "samples: $(samples long.err | awk '{print $2}') (target 178200 per busy CPU; the fixture has 1 busy worker; perf may cap -F at kernel.perf_event_max_sample_rate=$(cat /proc/sys/kernel/perf_event_max_sample_rate))"
echo "docker CLI + plugin peak RSS: $(plugin_rss time-long.txt) kB (/usr/bin/time -v)"
grep '^#' mem-long.txt | sed 's/^# //'
# bounded? the sidecars' summed RSS at 25/50/75/100 % of the recording
awk -v d="$LONG_S" '!/^#/ {t[NR]=$1; r[NR]=$2; n=NR} END {
    printf "sidecars summed RSS over time (kB):"
    for (q = 1; q <= 4; q++) { want = d * q / 4; best = 0
        for (i = 1; i <= n; i++) if (t[i] <= want) best = r[i]
        printf " %ds=%d", want, best }
    printf "\n" }' mem-long.txt
[ "$rc" = 0 ] || tail -5 long.err
exit 0
