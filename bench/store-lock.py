#!/usr/bin/env python3
# How long a command holds a SQLite store's write lock at a stretch: while it runs, another
# connection tries BEGIN IMMEDIATE (no wait) every 2 ms; the longest run of refusals is the longest
# a recorder's put would have waited (docs/STORE.md, "Retention and compaction").
#   bench/store-lock.py STORE.db build/docker-flame flame prune --retain 24h --no-compact --store STORE.db
import sqlite3, subprocess, sys, threading, time
db, cmd = sys.argv[1], sys.argv[2:]
done = False; longest = 0.0; busy_since = None; tries = 0; busy_n = 0
def probe():
    global longest, busy_since, tries, busy_n
    c = sqlite3.connect(db, timeout=0, isolation_level=None)
    while not done:
        t = time.monotonic()
        try:
            c.execute("BEGIN IMMEDIATE"); c.execute("ROLLBACK")
            if busy_since is not None:
                longest = max(longest, t - busy_since); busy_since = None
        except sqlite3.OperationalError:
            busy_n += 1
            if busy_since is None: busy_since = t
        tries += 1
        time.sleep(0.002)
th = threading.Thread(target=probe); th.start()
t0 = time.monotonic()
r = subprocess.run(cmd, capture_output=True, text=True)
took = time.monotonic() - t0
done = True; th.join()
if busy_since is not None: longest = max(longest, time.monotonic() - busy_since)
print(f"took {took:.2f} s, write lock held at most {longest*1000:.0f} ms at a stretch ({busy_n}/{tries} probes busy); {r.stderr.strip()}")
