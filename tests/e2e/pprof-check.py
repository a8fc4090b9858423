#!/usr/bin/env python3
"""Compare a pprof file, as Go's own `go tool pprof` reads it, with the folded stacks it was made
from (tests/e2e/pprof-*.t). Prints one line per check, "NAME<TAB>ok" or "NAME<TAB>why not":
  total   the sample total pprof reports (-top) = the folded total
  top10   the ten largest self (flat) counts and their functions are the folded ones
  traces  every stack pprof prints (-traces), with its count, is a folded stack (and all of them)
Folded names map to pprof functions as docs/PPROF.md says: _[j] and _[i] dropped (an _[i] frame
is a line of its caller's location; pprof prints it with " (inline)"). The go environment
(HOME, GOCACHE, GOFLAGS, GOTOOLCHAIN, GOPROXY) is the caller's."""
import collections
import re
import subprocess
import sys


def pprof(*args):
    r = subprocess.run(["go", "tool", "pprof", "-sample_index=samples", *args],
                       capture_output=True, check=False)
    if r.returncode != 0:
        sys.exit("go tool pprof %s failed: %s" % (" ".join(args), r.stderr.decode(errors="replace")))
    return r.stdout.decode("utf-8", errors="surrogateescape")


def fn_name(frame):
    return frame[:-4] if frame.endswith("_[j]") or frame.endswith("_[i]") else frame


def load_folded(path):
    stacks = collections.Counter()
    with open(path, "rb") as f:
        for raw in f:
            line = raw.decode("utf-8", errors="surrogateescape").rstrip("\n")
            if not line:
                continue
            stack, count = line.rsplit(" ", 1)
            frames = tuple(fn_name(x) for x in stack.split(";"))
            stacks[tuple(reversed(frames))] += int(count)  # leaf first, as pprof prints
    return stacks


def strip_inline(name):
    return name[:-9] if name.endswith(" (inline)") else name


def parse_traces(text):
    """-traces: blocks between separator lines; a frame line is a value right-aligned in 10
    columns, 3 blanks, the name; following frames have a blank value; label lines have ':'."""
    stacks = collections.Counter()
    cur, value = [], None
    for line in text.split("\n") + ["-----------+"]:
        if line.startswith("-----------+"):
            if cur:
                stacks[tuple(cur)] += value
            cur, value = [], None
            continue
        if len(line) < 14 or line[10:13] != "   ":
            continue  # header, or a label line ("  container:  web")
        v = line[:10].strip()
        if v:
            if cur:  # a second value in one block: not the format we know
                raise SystemExit("unexpected -traces line: %r" % line)
            value = int(v)
        cur.append(strip_inline(line[13:]))
    return stacks


def parse_top(text):
    total, rows = None, []
    for line in text.split("\n"):
        m = re.search(r"accounting for (-?\d+), [\d.]+% of (-?\d+) total", line)
        if m:
            total = int(m.group(2))
        m = re.match(r"^\s*(-?\d+)\s+-?[\d.]+%\s+-?[\d.]+%\s+(-?\d+)\s+-?[\d.]+%\s\s(.*)$", line)
        if m:
            rows.append((int(m.group(1)), strip_inline(m.group(3))))
    return total, rows


def main():
    folded_path, pb = sys.argv[1], sys.argv[2]
    stacks = load_folded(folded_path)
    flat = collections.Counter()
    for st, c in stacks.items():
        flat[st[0]] += c
    total = sum(stacks.values())

    ptotal, prows = parse_top(pprof("-top", "-nodecount=1000000", "-nodefraction=0", pb))
    print("total\t%s" % ("ok" if ptotal == total else "pprof %s, folded %s" % (ptotal, total)))

    pflat = collections.Counter()
    for v, name in prows:
        pflat[name] += v
    ours = sorted(flat.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
    theirs = sorted(((v, n) for n, v in pflat.items()), key=lambda vn: (-vn[0], vn[1]))[:10]
    bad = [n for n, v in ours if pflat.get(n) != v] + [n for v, n in theirs if flat.get(n) != v]
    if [v for _, v in ours] != [v for v, _ in theirs]:
        bad.append("counts %s vs %s" % ([v for _, v in ours], [v for v, _ in theirs]))
    print("top10\t%s" % ("ok" if not bad and len(ours) == min(10, len(flat))
                         else "differ: %r" % bad[:5]))

    traces = parse_traces(pprof("-traces", pb))
    if traces == stacks:
        print("traces\tok")
    else:
        miss = [(s, c) for s, c in stacks.items() if traces.get(s) != c][:3]
        extra = [(s, c) for s, c in traces.items() if stacks.get(s) != c][:3]
        print("traces\tdiffer: %d vs %d stacks; folded-only %r; pprof-only %r"
              % (len(stacks), len(traces), miss, extra))
    print("top\t%s" % ";".join(n for n, _ in ours[:3]))


if __name__ == "__main__":
    main()
