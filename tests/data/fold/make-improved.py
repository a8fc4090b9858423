#!/usr/bin/env python3
"""Derive jdk17-container-work.improved.txt from stackcollapse-perf.pl's own output
(expected/perf-jdk17-container-work-collapsed-default.txt) by applying exactly the documented
changes of our default mode (docs/FOLDING.md), independently of the C code:
  1. counts are samples, not summed periods (every sample of this capture has period 5025125);
  2. JDK perf-map names lose their return type ("long Work.step" -> "Work.step");
  3. no trailing space ("StubRoutines " -> "StubRoutines");
then merge equal stacks and sort bytewise, as the folder does.
Usage: make-improved.py PERL_DEFAULT_OUTPUT > jdk17-container-work.improved.txt"""
import re
import sys

PERIOD = 5025125
# "<return type> <qualified.method>" as left by Perl's paren stripping of a JDK perf-map name
java = re.compile(r"^[\w.$\[\]]+ ([\w$]+(?:\.[\w$<>]+)+)$")
out = {}
for line in open(sys.argv[1], "rb").read().decode().splitlines():
    stack, count = line.rsplit(" ", 1)
    count = int(count)
    assert count % PERIOD == 0, line
    frames = []
    for fr in stack.split(";"):
        m = java.match(fr)
        if m:
            fr = m.group(1)
        frames.append(fr.rstrip())
    key = ";".join(frames)
    out[key] = out.get(key, 0) + count // PERIOD
for k in sorted(out, key=lambda s: s.encode()):
    print(f"{k} {out[k]}")
