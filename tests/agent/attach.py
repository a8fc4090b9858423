#!/usr/bin/env python3
"""Test driver: send one HotSpot attach command the way the sidecar does (`load <path> true
<options>`), print the reply and exit with the reply's status. For the agent's e2e tests only
(same host, same user as the JVM); the sidecar has its own C implementation.

usage: attach.py PID load /abs/libflameagent.so true 'start,dir=/tmp'
Output: line 1 'status=<N>', then the JVM's reply text verbatim. Exit 0 if the exchange
happened (whatever the status), 2 if it could not attach within the timeout."""
import os
import signal
import socket
import sys
import time

TIMEOUT = 10.0


def main():
    pid = int(sys.argv[1])
    cmd = sys.argv[2:]
    args = (cmd + ["", "", ""])[:4]  # the protocol always carries exactly three arguments
    sock_path = "/tmp/.java_pid%d" % pid
    deadline = time.monotonic() + TIMEOUT
    if not os.path.exists(sock_path):
        # Ask the JVM to start its attach listener: .attach_pid file in its cwd + SIGQUIT.
        trigger = "/proc/%d/cwd/.attach_pid%d" % (pid, pid)
        try:
            open(trigger, "w").close()
        except OSError:
            trigger = "/tmp/.attach_pid%d" % pid
            open(trigger, "w").close()
        try:
            os.kill(pid, signal.SIGQUIT)
            while not os.path.exists(sock_path):
                if time.monotonic() > deadline:
                    print("attach: no %s after %.0f s" % (sock_path, TIMEOUT), file=sys.stderr)
                    return 2
                time.sleep(0.05)
        finally:
            os.unlink(trigger)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(max(0.1, deadline - time.monotonic()))
    s.connect(sock_path)
    s.sendall(b"1\0" + b"".join(a.encode() + b"\0" for a in args))
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    status, _, text = data.partition(b"\n")
    sys.stdout.write("status=%s\n" % status.decode(errors="replace").strip())
    sys.stdout.write(text.decode(errors="replace"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
