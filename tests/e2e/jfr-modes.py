#!/usr/bin/env python3
"""Sums a JFR recording's allocation samples and monitor waits (tests/e2e/modes-jfr.t).

    jfr print --json --stack-depth 8 --events jdk.ObjectAllocationSample,jdk.JavaMonitorEnter R.jfr \
        | jfr-modes.py START_MS END_MS

Keeps the events whose start lies in [START_MS, END_MS] (epoch milliseconds) and prints one line
per kind, class and leaf method, with exact integers (no rounded print of jfr's):
    alloc <class> <Class.method> <sum of weight, bytes> <events>
    lock <monitor class> <Class.method> <sum of duration, ns> <events>
Classes and methods are named as docker-flame names them (java.lang.Object, long[], A$B.m).
"""
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jfrtime import duration_ns, epoch_ns  # noqa: E402


def class_name(c):
    # JFR: "java/lang/Object", "[J", "[B", "[Ljava/lang/String;"
    n = c["name"] if c else "?"
    dims = 0
    while n.startswith("["):
        dims += 1
        n = n[1:]
    if dims:
        prim = {"Z": "boolean", "B": "byte", "C": "char", "S": "short", "I": "int", "J": "long",
                "F": "float", "D": "double"}
        n = prim.get(n, n[1:-1] if n.startswith("L") else n)
    return n.replace("/", ".") + "[]" * dims


def leaf(ev):
    st = ev.get("stackTrace") or {}
    fr = st.get("frames") or []
    if not fr:
        return "?"
    m = fr[0]["method"]
    return class_name(m["type"]) + "." + m["name"]


def main():
    lo, hi = int(sys.argv[1]) * 10**6, int(sys.argv[2]) * 10**6
    events = json.load(sys.stdin)["recording"]["events"]
    sums = {}
    for e in events:
        v = e["values"]
        t = epoch_ns(v["startTime"])
        if not lo <= t <= hi:
            continue
        if e["type"] == "jdk.ObjectAllocationSample":
            key, val = ("alloc", class_name(v["objectClass"]), leaf(v)), int(v["weight"])
        elif e["type"] == "jdk.JavaMonitorEnter":
            key, val = ("lock", class_name(v["monitorClass"]), leaf(v)), duration_ns(v["duration"])
        else:
            continue
        s = sums.setdefault(key, [0, 0])
        s[0] += val
        s[1] += 1
    for k in sorted(sums):
        print(" ".join(k), sums[k][0], sums[k][1])


main()
