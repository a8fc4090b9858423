#!/usr/bin/env python3
"""`make bench-overhead`: what recording costs a JVM, through `docker flame`.

Fixtures of our own (bench/fixtures/, built into the image flame-bench-jvm on top of the test
fixture image): PingPong (pairs of threads handing a token with park/unpark: a context switch per
hand-off), CpuBound (threads computing, no switches), AllocHeavy (threads allocating ~10 GB/s of
small objects and 8-KiB buffers) and Contended (4 threads taking one monitor in turn, ~2 us held:
most enters contended). Each prints once a second (bench/fixtures/Report.java)
`R <epoch_ms> <work> <interval_ms> <process CPU ms>`.

For each fixture and recording mode, rounds of four windows in ABBA order: A = not recording,
B = `docker flame --sampling MODE -d WINDOW` (thread, cpu) or `docker flame --mode MODE -d WINDOW`
(alloc, lock, wall, offcpu). A window's rate is the fixture's work per second
over the R lines inside it (the first second skipped); a round's slowdown is
1 - mean(B) / mean(A); `eff` is the same on work per CPU-second of the fixture, which the other
tenants of a shared machine disturb less. `sc_cpu` is the sidecar container's CPU (cpuacct,
recorder and sidecar together, attach and processing excluded: the recording phase only) in %
of one core. Host modes `perf-p` / `perf-p-nobuf` run the host's `perf record -p` (per-thread,
with and without --no-buffering) for the cost of perf's buffering alone.
Mode `record`: continuous recording as `docker flame record` does it at its defaults
(10-s windows, 49 Hz, into a SQLite store in a temporary directory; --freq does not apply). A
round is A, then the recorder started and, once it has stored its first window (steady state),
two B windows while it runs, then it is stopped (SIGINT) before the second A. `sc_cpu` is then the
sidecar's CPU over both B windows and `pl_cpu` the CPU of the docker CLI + plugin process tree on
the host (the part that stores windows), each in % of one core.
Fidelity: the test fixture's FlameFixture (several hot methods) recorded in both modes, alternately
(thread cpu cpu thread per round): the top-10 self-time methods per mode, and the self-time
distance (total variation) between the modes against the one between two recordings of a mode.

Needs: a Docker engine (DOCKER_HOST, or FLAME_ENGINE_DIR as for tests/run), build/ (make), javac.
"""
import argparse
import atexit
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, "build")
IMAGE = "flame-bench-jvm:latest"
JAVA = ["/opt/java/openjdk/bin/java", "-XX:+PreserveFramePointer", "-Xmx64m", "-XX:+UseSerialGC",
        "-cp", "/bench"]
FIXTURES = {"pingpong": ["PingPong", "2"], "cpubound": ["CpuBound", "2"],
            "alloc": ["AllocHeavy", "2"], "contended": ["Contended", "4"],
            # fidelity: the test fixture's workload (several hot methods, HashMap, inlining);
            # recordings only, alternating the modes, for the top-10 comparison
            "fidelity": ["-cp", "/app", "FlameFixture", "--threads", "2"]}


# --modes values that are profile modes (`docker flame --mode X`), not cpu sampling ways
# (alloc-fixed: --mode alloc at the fixed 512 KiB interval, without the rate cap)
PROFILE_MODES = ("alloc", "lock", "wall", "offcpu")


def sh(*cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw).stdout.strip()


def now_ms():
    return int(time.time() * 1000)


def build_image(tmp):
    subprocess.run([os.path.join(ROOT, "tests/fixtures/build.sh")], check=True,
                   stdout=subprocess.DEVNULL)
    ctx = os.path.join(tmp, "img")
    os.makedirs(os.path.join(ctx, "bench"))
    fdir = os.path.join(ROOT, "bench/fixtures")
    srcs = [os.path.join(fdir, f) for f in sorted(os.listdir(fdir)) if f.endswith(".java")]
    sh("javac", "--release", "17", "-d", os.path.join(ctx, "bench"), *srcs)
    with open(os.path.join(ctx, "Dockerfile"), "w") as f:
        f.write("FROM flame-fixture-jvm:latest\nCOPY bench/ /bench/\n")
    sh("docker", "build", "-q", "-t", IMAGE, ctx)


def ensure_sidecar_image():
    version = sh("sed", "-n", "s/^VERSION *:= *//p", os.path.join(ROOT, "Makefile"))
    tar = os.path.join(BUILD, "flame-sidecar.tar")
    want = sh("sha256sum", tar).split()[0][:16]
    image = "docker-flame-sidecar:" + version
    have = subprocess.run(["docker", "image", "inspect", "-f",
                           '{{index .Config.Labels "com.docker-flame.tar-sha256"}}', image],
                          text=True, capture_output=True).stdout.strip()
    if have != want:
        sh("docker", "import", "--change", "LABEL com.docker-flame.tar-sha256=" + want, tar, image)


class Fixture:
    """A fixture container and the R lines it prints (collected by a thread)."""

    def __init__(self, name, args, image):
        java = JAVA[:-2] if "-cp" in args else JAVA
        self.id = sh("docker", "run", "-d", "--network", "none", "--label", "docker-flame-test=1",
                     "--label", "flame-bench=1", image, *java, *args)
        self.lines = []
        self.proc = subprocess.Popen(["docker", "logs", "-f", self.id], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.hostpid = int(sh("docker", "inspect", "-f", "{{.State.Pid}}", self.id))

    def _read(self):
        for line in self.proc.stdout:
            p = line.split()
            if len(p) == 5 and p[0] == "R":
                self.lines.append(tuple(int(x) for x in p[1:]))

    def window(self, t0, t1):
        """(work/s, work per CPU-s) over the R lines in (t0 + 1000, t1]."""
        sel = [r for r in self.lines if t0 + 1000 < r[0] <= t1]
        work = sum(r[1] for r in sel)
        ms = sum(r[2] for r in sel)
        cpu = sum(r[3] for r in sel)
        return (work * 1000.0 / ms if ms else float("nan"),
                work * 1000.0 / cpu if cpu else float("nan"))

    def stop(self):
        subprocess.run(["docker", "rm", "-f", self.id], capture_output=True)
        self.proc.kill()


def cpuacct(container_id):
    for base in ("/sys/fs/cgroup/cpuacct/docker", "/sys/fs/cgroup/cpu,cpuacct/docker",
                 "/sys/fs/cgroup/system.slice/docker-%s.scope" % container_id):
        for p in (os.path.join(base, container_id, "cpuacct.usage"),
                  os.path.join(base, "cpu.stat")):
            try:
                with open(p) as f:
                    text = f.read()
                if p.endswith("cpu.stat"):  # cgroup v2: usage_usec
                    return int(text.split("usage_usec")[1].split()[0]) * 1000
                return int(text)
            except (OSError, IndexError, ValueError):
                continue
    return None


def record_window(fx, mode, window_s, freq, out_dir, tag):
    """One B window: the recording phase's (t0, t1), the sidecar's CPU % of one core, and the
    folded profile's path."""
    if mode.startswith("perf-p"):
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-g", "-F", str(freq), "-p",
               str(fx.hostpid), "-o", "/dev/null"]
        if mode == "perf-p-nobuf":
            cmd.insert(3, "--no-buffering")
        t0 = now_ms()
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        before = open("/proc/%d/stat" % p.pid).read().split() if os.path.exists(
            "/proc/%d/stat" % p.pid) else None
        time.sleep(window_s)
        after = open("/proc/%d/stat" % p.pid).read().split()
        t1 = now_ms()
        p.send_signal(2)
        p.wait()
        ticks = os.sysconf("SC_CLK_TCK")
        cpu = (int(after[13]) + int(after[14])) - ((int(before[13]) + int(before[14])) if before else 0)
        return t0, t1, 100.0 * cpu / ticks / ((t1 - t0) / 1000.0), None
    folded = os.path.join(out_dir, "%s.folded" % tag)
    # thread / cpu: how cpu samples are taken (per thread or per CPU); a profile mode: that mode
    # alone, as a user runs it (`--mode alloc` records the agent's table, no cpu samples)
    how = (["--mode", mode] if mode in PROFILE_MODES else
           ["--mode", "alloc", "--alloc-interval", "524288"] if mode == "alloc-fixed" else
           ["--sampling", mode])
    cmd = ["docker", "flame", *how, "-F", str(freq), "-d", "%ds" % window_s,
           "--format", "folded", "-o", folded, fx.id]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t0 = t1 = None
    sc = c0 = c1 = None
    last = ""
    for line in p.stderr:
        if line.strip():
            last = line.strip()
        if t0 is None and "recording" in line:
            # the first progress line comes one second into the recording
            seen = now_ms()
            t0 = seen - 1000
            t1 = t0 + window_s * 1000
            ids = sh("docker", "ps", "-q", "--no-trunc", "--filter", "label=com.docker-flame.sidecar=1",
                     "--filter", "label=com.docker-flame.target=" + fx.id).split()
            sc = ids[0] if ids else None
            c0 = cpuacct(sc) if sc else None
            time.sleep(max(0, (t1 - 300 - now_ms()) / 1000.0))
            c1 = cpuacct(sc) if sc else None
            cwin = now_ms() - seen
    p.wait()
    # `--mode lock` of a JVM where nothing waits writes nothing (exit 1): what it cost is a figure
    # all the same
    empty = mode != "thread" and mode != "cpu" and "nothing recorded" in last
    if (p.returncode != 0 and not empty) or t0 is None:
        sys.exit("bench: docker flame %s failed (exit %d): %s" % (" ".join(how), p.returncode,
                                                                    last))
    cpu = 100.0 * (c1 - c0) / 1e6 / cwin if c0 is not None and c1 is not None else float("nan")
    return t0, t1, cpu, folded


def proc_tree_cpu(pid):
    """CPU seconds (user + system) of pid and its descendants, alive now."""
    parent, cpu = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parent[int(d)] = int(st[1])
        cpu[int(d)] = int(st[11]) + int(st[12])
    tree, todo = set(), [pid]
    while todo:
        p = todo.pop()
        tree.add(p)
        todo += [c for c, pp in parent.items() if pp == p and c not in tree]
    return sum(cpu.get(p, 0) for p in tree) / os.sysconf("SC_CLK_TCK")


def record_session(fx, window_s, out_dir, tag):
    """`docker flame record` at its defaults; two B windows once its first window is stored:
    ([(t0, t1), (t2, t3)], sidecar CPU %, plugin CPU % of one core)."""
    db = os.path.join(out_dir, "rec-%s.db" % tag)
    p = subprocess.Popen(["docker", "flame", "record", fx.id, "--store", db],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    for line in p.stderr:
        lines.append(line)
        if "stored (" in line:
            break
    else:
        sys.exit("bench: docker flame record stored nothing (exit %s): %s" % (p.wait(), "".join(lines)))
    threading.Thread(target=lambda: [None for _ in p.stderr], daemon=True).start()
    ids = sh("docker", "ps", "-q", "--no-trunc", "--filter", "label=com.docker-flame.sidecar=1",
             "--filter", "label=com.docker-flame.target=" + fx.id).split()
    sc = ids[0] if ids else None
    c0, u0, s0 = cpuacct(sc) if sc else None, proc_tree_cpu(p.pid), time.time()
    wins = []
    for i in range(2):
        t0 = now_ms()
        time.sleep(window_s)
        wins.append((t0, now_ms()))
        if i == 0:
            time.sleep(1)
    c1, u1, s1 = cpuacct(sc) if sc else None, proc_tree_cpu(p.pid), time.time()
    p.send_signal(2)
    if p.wait(timeout=120) != 0:
        sys.exit("bench: docker flame record exited %d" % p.returncode)
    cpu = 100.0 * (c1 - c0) / 1e9 / (s1 - s0) if c0 is not None and c1 is not None else float("nan")
    return wins, cpu, 100.0 * (u1 - u0) / (s1 - s0)


def record_round(fx, a, tmp, name, r):
    """A, B, B, A with the recorder running through both B: (rates, effs, sidecar %, plugin %)."""
    rates, effs = [], []

    def add(t0, t1):
        rate, eff = fx.window(t0, t1)
        rates.append(rate)
        effs.append(eff)

    t0 = now_ms()
    time.sleep(a.window)
    add(t0, now_ms())
    time.sleep(1)
    wins, sc, pl = record_session(fx, a.window, tmp, "%s-%d" % (name, r))
    for w in wins:
        add(*w)
    time.sleep(1)
    t0 = now_ms()
    time.sleep(a.window)
    add(t0, now_ms())
    return rates, effs, sc, pl


def self_shares(path):
    counts = {}
    with open(path) as f:
        for line in f:
            stack, _, n = line.rstrip("\n").rpartition(" ")
            leaf = stack.rsplit(";", 1)[-1]
            counts[leaf] = counts.get(leaf, 0) + int(n)
    total = sum(counts.values()) or 1
    return {k: v / total for k, v in counts.items()}


def merged(paths):
    acc = {}
    for p in paths:
        for k, v in self_shares(p).items():
            acc[k] = acc.get(k, 0) + v / len(paths)
    return acc


def distance(a, b):
    return 0.5 * sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b))


def fmt(x):
    return "%10.0f" % x if abs(x) >= 100 else "%10.3f" % x


def fidelity(fx, a, tmp):
    folded = {"thread": [], "cpu": []}
    for r in range(1, a.rounds + 1):
        for i, mode in enumerate(("thread", "cpu", "cpu", "thread")):
            folded[mode].append(record_window(fx, mode, a.window, a.freq, tmp,
                                              "fid-%s-%d-%d" % (mode, r, i))[3])
    tops = {}
    for mode in ("thread", "cpu"):
        m = merged(folded[mode])
        tops[mode] = sorted(m, key=m.get, reverse=True)[:10]
        print("top-10 self (%s, %d recordings): %s" % (mode, len(folded[mode]), ", ".join(
            "%s %.1f%%" % (k, 100 * m[k]) for k in tops[mode])))
    print("same top-10 set: %s; same order: %s" %
          (set(tops["thread"]) == set(tops["cpu"]), tops["thread"] == tops["cpu"]))
    fs, fc = folded["thread"], folded["cpu"]
    within = [distance(self_shares(f[i]), self_shares(f[i + 1]))
              for f in (fs, fc) for i in range(0, len(f) - 1, 2)]
    between = [distance(self_shares(x), self_shares(y)) for x, y in zip(fs, fc)]
    print("self-time distance (total variation): between modes mean %.3f (max %.3f); two "
          "recordings of one mode mean %.3f (max %.3f)" %
          (statistics.mean(between), max(between), statistics.mean(within), max(within)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--window", type=int, default=8, help="seconds per window")
    ap.add_argument("--freq", type=int, default=99)
    ap.add_argument("--fixtures", default="pingpong,cpubound,fidelity")
    ap.add_argument("--modes", default="thread,cpu",
                    help="thread,cpu,perf-p,perf-p-nobuf,record (record: docker flame record),"
                    " alloc,lock,wall,offcpu (docker flame --mode X), alloc-fixed (--mode alloc"
                    " --alloc-interval 524288: no rate cap)")
    ap.add_argument("--warm", type=int, default=15, help="seconds of warm-up")
    a = ap.parse_args()
    if os.environ.get("FLAME_ENGINE_DIR") and not os.environ.get("DOCKER_HOST"):
        os.environ["DOCKER_HOST"] = sh(os.path.join(ROOT, "scripts/engine.sh"), "host")
    tmp = tempfile.mkdtemp(prefix="flame-bench-overhead.")
    # removed on every way out (a failed recording's sys.exit, Ctrl-C), not only at the end
    atexit.register(shutil.rmtree, tmp, True)
    cfg = os.path.join(tmp, "docker-config", "cli-plugins")
    os.makedirs(cfg)
    os.symlink(os.path.join(BUILD, "docker-flame"), os.path.join(cfg, "docker-flame"))
    os.environ["DOCKER_CONFIG"] = os.path.dirname(cfg)
    build_image(tmp)
    ensure_sidecar_image()
    print("# %s  bench/overhead.py --rounds %d --window %d --freq %d --fixtures %s --modes %s"
          % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), a.rounds, a.window, a.freq,
             a.fixtures, a.modes))
    print("# host: %d CPUs, loadavg %s" % (os.cpu_count(), open("/proc/loadavg").read().strip()))
    for name in a.fixtures.split(","):
        fx = Fixture(name, FIXTURES[name], "flame-fixture-jvm:latest" if name == "fidelity" else IMAGE)
        try:
            time.sleep(a.warm)
            record_window(fx, "cpu", 2, a.freq, tmp, "warm")  # loads the agent once
            time.sleep(2)
            if name == "fidelity":
                print("\n## fidelity (FlameFixture --threads 2)")
                fidelity(fx, a, tmp)
                continue
            print("\n## %s (%s): work/s per window; slow%% = 1 - mean(B)/mean(A)" %
                  (name, " ".join(FIXTURES[name])))
            print("%-13s %5s %10s %10s %10s %10s %8s %8s %8s %8s" %
                  ("mode", "round", "A1", "B1", "B2", "A2", "slow%", "eff%", "sc_cpu%", "pl_cpu%"))
            res = {}
            folded = {}
            for mode in a.modes.split(","):
                for r in range(1, a.rounds + 1):
                    rates, effs, cpus, pl = [], [], [], float("nan")
                    if mode == "record":
                        rates, effs, sc, pl = record_round(fx, a, tmp, name, r)
                        cpus.append(sc)
                    for w, kind in enumerate("ABBA" if mode != "record" else ""):
                        if kind == "A":
                            t0 = now_ms()
                            time.sleep(a.window)
                            t1 = now_ms()
                        else:
                            t0, t1, cpu, fp = record_window(fx, mode, a.window, a.freq, tmp,
                                                            "%s-%s-%d-%d" % (name, mode, r, w))
                            cpus.append(cpu)
                            if fp:
                                folded.setdefault(mode, []).append(fp)
                        rate, eff = fx.window(t0, t1)
                        rates.append(rate)
                        effs.append(eff)
                        time.sleep(1)
                    slow = 100 * (1 - (rates[1] + rates[2]) / (rates[0] + rates[3]))
                    effslow = 100 * (1 - (effs[1] + effs[2]) / (effs[0] + effs[3]))
                    c = statistics.mean(cpus)
                    res.setdefault(mode, []).append((slow, effslow, c, pl))
                    print("%-13s %5d %s %s %s %s %8.2f %8.2f %8.3f %8.3f" %
                          (mode, r, *[fmt(x) for x in rates], slow, effslow, c, pl), flush=True)
            print("\n%-13s %10s %8s %8s %10s %8s %10s %10s" %
                  ("mode", "slow% mean", "stdev", "median", "eff% mean", "stdev", "sc_cpu%",
                   "pl_cpu%"))
            for mode, v in res.items():
                s = [x[0] for x in v]
                e = [x[1] for x in v]
                c = [x[2] for x in v]
                pc = [x[3] for x in v]
                sd = statistics.stdev(s) if len(s) > 1 else 0
                ed = statistics.stdev(e) if len(e) > 1 else 0
                print("%-13s %10.2f %8.2f %8.2f %10.2f %8.2f %10.3f %10.3f" %
                      (mode, statistics.mean(s), sd, statistics.median(s), statistics.mean(e), ed,
                       statistics.mean(c), statistics.mean(pc)))
        finally:
            fx.stop()


if __name__ == "__main__":
    main()
