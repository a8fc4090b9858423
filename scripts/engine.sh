#!/usr/bin/env bash
# Make sure a Docker engine answers on the default socket, starting Debian's dockerd when none
# does. Only an engine this script started (recorded in its pidfile) is ever stopped, by pid.
#   scripts/engine.sh start   -> prints "started" or "already-running"
#   scripts/engine.sh stop    -> stops the dockerd we started, if any
#   scripts/engine.sh status
set -euo pipefail
SOCK=${FLAME_ENGINE_SOCK:-/var/run/docker.sock}
PIDFILE=${FLAME_ENGINE_PIDFILE:-/run/docker-flame-dockerd.pid}
LOG=${FLAME_ENGINE_LOG:-/var/log/docker-flame-dockerd.log}

answers() { curl -fsS --max-time 3 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

case "${1:-status}" in
start)
    if answers; then echo already-running; exit 0; fi
    command -v dockerd >/dev/null || PATH=$PATH:/usr/sbin
    command -v dockerd >/dev/null || { echo "engine.sh: no engine answers on $SOCK and dockerd is not installed (apt-get install docker.io)" >&2; exit 1; }
    # Flags verified on these machines: no bridge/iptables (no network is ever used), our own
    # pidfile so we can stop exactly this daemon later.
    setsid dockerd --bridge=none --iptables=false --ip6tables=false -H "unix://$SOCK" \
        --pidfile "$PIDFILE" >>"$LOG" 2>&1 < /dev/null &
    for _ in $(seq 1 300); do
        answers && { echo started; exit 0; }
        kill -0 $! 2>/dev/null || break
        sleep 0.1
    done
    echo "engine.sh: dockerd did not come up; see $LOG" >&2; tail -5 "$LOG" >&2 || true; exit 1 ;;
stop)
    [ -f "$PIDFILE" ] || exit 0
    pid=$(cat "$PIDFILE"); kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PIDFILE" ;;
status) answers && echo running || { echo stopped; exit 1; } ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
