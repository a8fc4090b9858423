#!/usr/bin/env python3
"""`make bench-offcpu-ab`: what the off-CPU recorder costs a JVM that switches ~1 M times a second.

Starts the PingPong fixture (bench/fixtures/PingPong.java, 2 pairs: a context switch per hand-off)
with the host's java in a PID namespace of its own (unshare --pid --fork: the off-CPU program's
filter sees it as a container's JVM), then rounds of four windows in ABBA order: A = nothing
attached, B = `offcpu-cost <pid> <window> <mode>` (the recorder's off-CPU path as the sidecar
runs it, the kernel's BPF statistics off: OFFCPU_NO_STATS=1). A window's rate is the fixture's
work per second over its R lines inside the window (the first second skipped); a round's slowdown
is 1 - mean(B) / mean(A), `eff` the same on work per CPU-second of the fixture (less disturbed by
other tenants of a shared machine); `rec_cpu` the recorder's own CPU (user + system) in % of one
core over the B windows. The fixture is stopped on every path (also on Ctrl-C).

Root on the host; needs javac and java (17+), unshare, and build/bench/offcpu-cost (make).
Usage: bench/offcpu-ab.py [--rounds N] [--window S] [--mode offcpu|wall] [--cost PATH ...]
--cost (repeatable): offcpu-cost builds to compare, e.g. an older commit's and this one's: a
round is then A, B1 .. Bn, Bn .. B1, A, the builds' order turned by one each round (each build
as often next to A as next to another build), with the same fixture: one machine state.
"""
import argparse
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=6.0)
    ap.add_argument("--mode", default="offcpu", choices=["offcpu", "wall"])
    ap.add_argument("--cost", action="append")
    a = ap.parse_args()
    # stopped by a signal: the fixture is stopped too (finally); SIGINT is ignored in a job
    # started in the background by a script, SIGTERM would skip the cleanup
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(130))
    costs = a.cost or [os.path.join(ROOT, "build/bench/offcpu-cost")]
    tmp = tempfile.mkdtemp(prefix="offcpu-ab-")
    fx = None
    try:
        subprocess.run(["javac", "-d", tmp, os.path.join(ROOT, "bench/fixtures/PingPong.java"),
                        os.path.join(ROOT, "bench/fixtures/Report.java")],
                       check=True)
        fx = subprocess.Popen(["unshare", "--pid", "--fork", "java", "-XX:+PreserveFramePointer",
                               "-Xmx64m", "-XX:+UseSerialGC", "-cp", tmp, "PingPong", "2"],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
        lines = []
        ready = threading.Event()

        def read():
            for line in fx.stdout:
                if line.startswith("PingPong ready"):
                    ready.set()
                p = line.split()
                if len(p) == 5 and p[0] == "R":
                    lines.append(tuple(int(x) for x in p[1:]))
        threading.Thread(target=read, daemon=True).start()
        if not ready.wait(30):
            sys.exit("PingPong did not start")
        # the JVM: the child of unshare's child (the namespace's pid 1)
        pid = None
        for _ in range(100):
            out = subprocess.run(["pgrep", "-P", str(fx.pid)], capture_output=True, text=True)
            kids = out.stdout.split()
            if kids:
                pid = kids[0]
                break
            time.sleep(0.05)
        if not pid:
            sys.exit("PingPong's pid not found")
        time.sleep(2)  # JIT warm-up

        def window(cost, cpu):
            t0 = int(time.time() * 1000)
            if cost:
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([cost, pid, str(a.window), a.mode], check=True,
                               stdout=subprocess.DEVNULL,
                               env=dict(os.environ, OFFCPU_NO_STATS="1"))
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu.append((r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / a.window)
            else:
                time.sleep(a.window)
            t1 = int(time.time() * 1000)
            time.sleep(1.2)  # the R line that closes the window
            w = [x for x in lines if x[0] - x[2] >= t0 + 1000 and x[0] <= t1]
            ms = sum(x[2] for x in w)
            cpu_ms = sum(x[3] for x in w)
            work = sum(x[1] for x in w)
            if not ms or not cpu_ms:  # the fixture printed nothing: stalled, a cost too
                print(f"window at {t0}: no R lines (the fixture stalled)", flush=True)
                return 0.0, 0.0
            return work / ms * 1000, work / cpu_ms

        res = {c: [] for c in costs}
        for i in range(a.rounds):
            cpu = {c: [] for c in costs}
            order = costs[i % len(costs):] + costs[:i % len(costs)]
            a1 = window(None, None)
            b = {c: [window(c, cpu[c])] for c in order}
            for c in reversed(order):
                b[c].append(window(c, cpu[c]))
            a2 = window(None, None)
            for c in costs:
                s = 1 - (b[c][0][0] + b[c][1][0]) / (a1[0] + a2[0])
                e = 1 - (b[c][0][1] + b[c][1][1]) / (a1[1] + a2[1])
                res[c].append((s, e, statistics.mean(cpu[c])))
                print(f"round {i + 1} {c}: A {a1[0]:.0f} {a2[0]:.0f} B {b[c][0][0]:.0f} "
                      f"{b[c][1][0]:.0f} work/s  slowdown {s * 100:.2f} %  eff {e * 100:.2f} %  "
                      f"rec_cpu {res[c][-1][2] * 100:.2f} %", flush=True)
        for c in costs:
            r = res[c]
            print(f"{a.mode} ({c}): {a.rounds} rounds x {a.window:g}-s windows: slowdown mean "
                  f"{statistics.mean(x[0] for x in r) * 100:.2f} % median "
                  f"{statistics.median(x[0] for x in r) * 100:.2f} %, eff mean "
                  f"{statistics.mean(x[1] for x in r) * 100:.2f} % median "
                  f"{statistics.median(x[1] for x in r) * 100:.2f} %, rec_cpu "
                  f"{statistics.mean(x[2] for x in r) * 100:.2f} % of a core")
    finally:
        if fx:
            os.killpg(fx.pid, signal.SIGKILL)
            fx.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
