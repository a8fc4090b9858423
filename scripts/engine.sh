#!/usr/bin/env bash
# Make sure a Docker engine answers, starting Debian's dockerd when none does. Only an engine this
# script started (recorded in its pidfile) is ever stopped, by pid.
#   scripts/engine.sh start   -> prints "started" or "already-running"
#   scripts/engine.sh stop    -> stops the dockerd we started, if any
#   scripts/engine.sh status
#   scripts/engine.sh host    -> the DOCKER_HOST value of this engine
# By default the engine is the machine's (/var/run/docker.sock). With FLAME_ENGINE_DIR=DIR it is
# a private one whose socket, data, state, pidfile and log all live in DIR: several test runs
# (or a developer's run next to CI's) then never see each other's containers, and stopping one
# engine (tests/e2e/faults-engine.t does) cannot disturb another. DIR must be short: the socket
# path inside it is limited to 107 bytes by the kernel.
set -euo pipefail
if [ -n "${FLAME_ENGINE_DIR:-}" ]; then
    DIR=$FLAME_ENGINE_DIR
    SOCK=$DIR/docker.sock
    PIDFILE=$DIR/dockerd.pid
    LOG=$DIR/dockerd.log
    PRIVATE=(--config-file "$DIR/daemon.json" --data-root "$DIR/data" --exec-root "$DIR/exec")
else
    SOCK=${FLAME_ENGINE_SOCK:-/var/run/docker.sock}
    PIDFILE=${FLAME_ENGINE_PIDFILE:-/run/docker-flame-dockerd.pid}
    LOG=${FLAME_ENGINE_LOG:-/var/log/docker-flame-dockerd.log}
    PRIVATE=()
fi

answers() { curl -fsS --max-time 3 --unix-socket "$SOCK" http://localhost/_ping >/dev/null 2>&1; }

case "${1:-status}" in
start)
    if answers; then echo already-running; exit 0; fi
    command -v dockerd >/dev/null || PATH=$PATH:/usr/sbin
    command -v dockerd >/dev/null || { echo "engine.sh: no engine answers on $SOCK and dockerd is not installed (apt-get install docker.io)" >&2; exit 1; }
    if [ -n "${FLAME_ENGINE_DIR:-}" ]; then
        mkdir -p "$DIR"
        [ -f "$DIR/daemon.json" ] || echo '{}' >"$DIR/daemon.json" # not the host's daemon.json
    fi
    # Flags verified on these machines: no bridge/iptables (no network is ever used), our own
    # pidfile so we can stop exactly this daemon later.
    setsid dockerd "${PRIVATE[@]}" --bridge=none --iptables=false --ip6tables=false -H "unix://$SOCK" \
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
    rm -f "$PIDFILE"
    # A private engine's overlay mounts and state go with it.
    if [ -n "${FLAME_ENGINE_DIR:-}" ]; then
        grep -F " $DIR/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
    fi ;;
status) answers && echo running || { echo stopped; exit 1; } ;;
host) echo "unix://$SOCK" ;;
*) echo "usage: $0 start|stop|status|host" >&2; exit 2 ;;
esac
