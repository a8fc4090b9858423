#!/usr/bin/env python3
"""Sums a JFR recording's blocking events per thread in a window (tests/e2e/mode-wall-jfr.t).

    jfr print --json --stack-depth 1 --events jdk.ThreadSleep,jdk.JavaMonitorWait,jdk.ThreadPark R.jfr \
        | jfr-wall.py START_MS END_MS

Each event's interval [start, start + duration] is clipped to [START_MS, END_MS] (epoch
milliseconds); prints one line per thread and event type, exact integers (ns):
    <thread name> <event type> <ns inside the window> <events>
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jfrtime import duration_ns, epoch_ns  # noqa: E402


def main():
    lo, hi = int(sys.argv[1]) * 10**6, int(sys.argv[2]) * 10**6
    events = json.load(sys.stdin)["recording"]["events"]
    sums = {}
    for e in events:
        v = e["values"]
        t0 = epoch_ns(v["startTime"])
        t1 = t0 + duration_ns(v["duration"])
        a, b = max(t0, lo), min(t1, hi)
        if b <= a:
            continue
        th = (v.get("eventThread") or {}).get("javaName") or "?"
        key = (th.replace(" ", "_"), e["type"])
        s = sums.setdefault(key, [0, 0])
        s[0] += b - a
        s[1] += 1
    for k in sorted(sums):
        print(" ".join(k), sums[k][0], sums[k][1])


main()
