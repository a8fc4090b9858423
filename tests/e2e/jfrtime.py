"""Times as `jfr print --json` writes them, in exact integer ns (tests/e2e/jfr-*.py)."""
import re
from datetime import datetime, timezone


def epoch_ns(s):
    # "2026-11-27T03:36:37.681310911Z": whole seconds by datetime, the fraction by hand (ns)
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z$", s)
    if not m:
        raise ValueError("startTime " + s)
    whole = datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)
    frac = (m.group(2) or "0")[:9].ljust(9, "0")
    return int(whole.timestamp()) * 10**9 + int(frac)


def duration_ns(s):
    # ISO 8601 as java.time.Duration prints it: PT0.00195306S, PT1M2.5S, PT0S
    m = re.match(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(-?\d+)(?:\.(\d+))?S)?$", s)
    if not m:
        raise ValueError("duration " + s)
    h, mi, sec, frac = m.groups()
    ns = (int(h or 0) * 3600 + int(mi or 0) * 60 + int(sec or 0)) * 10**9
    return ns + int((frac or "0")[:9].ljust(9, "0"))
