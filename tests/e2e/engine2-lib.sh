# A PRIVATE second dockerd for tests that stop and start an engine (the suite's engine is never
# touched): its own --data-root/--exec-root/--pidfile/-H unix socket under $TMP/d2,
# --bridge=none --iptables=false --ip6tables=false, its own empty daemon.json (not the host's).
# engine2_start [DOCKERD FLAGS...]: start it (again) and wait until it answers (bounded);
# engine2_stop: SIGTERM by pid, bounded, then SIGKILL; engine2_teardown: remove its containers,
# stop it and the containerd (and shims) it started (by pid, found by its exec-root), unmount.
# Sourced after lib.sh. ENGINE2_SOCK: its DOCKER_HOST.
D2=$TMP/d2
mkdir -p "$D2"
echo "{}" >"$D2/daemon.json"
ENGINE2_SOCK=unix://$D2/sock
D2PID=
engine2_start() {
    dockerd --config-file "$D2/daemon.json" --data-root "$D2/data" --exec-root "$D2/exec" --pidfile "$D2/pid" \
        -H "$ENGINE2_SOCK" --bridge=none --iptables=false --ip6tables=false "$@" >>"$D2/log" 2>&1 &
    D2PID=$!
    local i
    for ((i = 0; i < 200; i++)); do
        docker -H "$ENGINE2_SOCK" info >/dev/null 2>&1 && return 0
        kill -0 "$D2PID" 2>/dev/null || return 1
        sleep 0.3
    done
    return 1
}
engine2_stop() {
    [ -n "$D2PID" ] || return 0
    kill -TERM "$D2PID" 2>/dev/null
    local i
    for ((i = 0; i < 300; i++)); do kill -0 "$D2PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$D2PID" 2>/dev/null
    wait "$D2PID" 2>/dev/null
    D2PID=
}
engine2_teardown() {
    if [ -n "$D2PID" ]; then
        docker -H "$ENGINE2_SOCK" rm -f $(docker -H "$ENGINE2_SOCK" ps -aq) >/dev/null 2>&1
        engine2_stop
    fi
    local p
    for p in $(pgrep -f -- "$D2/" 2>/dev/null); do [ "$p" != $$ ] && kill -TERM "$p" 2>/dev/null; done
    grep -F " $D2/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m"; done
}
