#!/usr/bin/env python3
"""Check a perf map written by the agent: every line is `<hex start> <hex size> <name>`, names
have no control bytes and at most 4095 bytes, the file ends with a newline, and no two distinct
ranges overlap (identical lines are allowed: a method compiled during the replay is announced
twice). Prints one summary line; exit 1 with the offending lines on failure.

check_map.py --watch DIR STOPFILE SECONDS: read every perf-*.map in DIR again and again while
the agent writes it (as the live `top` view does), until STOPFILE exists or SECONDS pass; every
complete line of every snapshot must parse (an unterminated tail is allowed)."""
import glob
import os
import re
import sys
import time

LINE = re.compile(rb"([0-9a-f]+) ([0-9a-f]+) ([^\x00-\x1f\x7f]{1,4095})")


def main():
    data = open(sys.argv[1], "rb").read()
    problems = []
    if data and not data.endswith(b"\n"):
        problems.append("file does not end with a newline")
    entries = set()
    lines = data.split(b"\n")[:-1]
    for n, line in enumerate(lines, 1):
        m = LINE.fullmatch(line)
        if not m:
            problems.append("line %d malformed: %r" % (n, line[:120]))
            continue
        start, size = int(m[1], 16), int(m[2], 16)
        if size == 0:
            problems.append("line %d has size 0" % n)
        entries.add((start, size, m[3]))
    ranges = sorted(entries)
    for a, b in zip(ranges, ranges[1:]):
        if a[0] + a[1] > b[0]:
            problems.append("overlap: %x+%x %s / %x+%x %s" % (a[0], a[1], a[2][:80], b[0], b[1], b[2][:80]))
    print("lines=%d unique=%d bytes=%d problems=%d" % (len(lines), len(entries), len(data), len(problems)))
    for p in problems[:20]:
        print("  " + p)
    return 1 if problems else 0


def watch(directory, stopfile, seconds):
    deadline = time.monotonic() + float(seconds)
    snapshots = bad = lines = 0
    while not os.path.exists(stopfile) and time.monotonic() < deadline:
        for path in glob.glob(os.path.join(directory, "perf-*.map")):
            try:
                data = open(path, "rb").read()
            except OSError:
                continue
            snapshots += 1
            for line in data[: data.rfind(b"\n") + 1].split(b"\n")[:-1]:
                lines += 1
                if not LINE.fullmatch(line):
                    bad += 1
                    print("  torn or malformed line: %r" % line[:120])
    print("snapshots=%d lines=%d bad=%d" % (snapshots, lines, bad))
    return 1 if bad or snapshots == 0 else 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--watch":
        sys.exit(watch(*sys.argv[2:]))
    sys.exit(main())
