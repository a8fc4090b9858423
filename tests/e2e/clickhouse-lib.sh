# Real ClickHouse servers for the store's tests and benchmarks (sourced after lib.sh): each with
# its own config and data directory under $TMP, on free ports of 127.0.0.1, started in ~1 s,
# stopped by pid (never by name) by ch_stop or at exit.
#   ch_start NAME [CLUSTER_XML]   start (or restart, same data) server NAME; sets CH_HTTP_<NAME>,
#                                 CH_TCP_<NAME>; CLUSTER_XML goes into <remote_servers>
#   ch_stop NAME                  stop it (SIGTERM, then SIGKILL after 10 s)
#   ch_sql NAME SQL               run SQL on it (curl), print the answer
#   ch_have                       is clickhouse-server installed?
CH_SERVER=$(command -v clickhouse-server || echo /usr/sbin/clickhouse-server)
ch_have() { [ -x "$CH_SERVER" ]; }

# The start of a store test on ClickHouse: $FLAME and $GEN (built, or bail out), the server
# installed (a missing one is a failure, never a skip: the store's fleet path is tested or it is
# not), $TMP the working dir, the default spool under it (XDG_DATA_HOME), no default store.
ch_test_setup() {
    FLAME=$BUILD/docker-flame
    GEN=$BUILD/store-gen
    [ -x "$FLAME" ] && [ -x "$GEN" ] || bail "build first (make): $FLAME, $GEN"
    ch_have || bail "clickhouse-server is not installed: ./install.sh --deps-only --test-deps"
    cd "$TMP" || bail "no scratch dir"
    export XDG_DATA_HOME=$TMP/xdg
    unset DOCKER_FLAME_STORE
}

# A port nothing listens on (a connection to it is refused).
# A TCP port no socket uses, below the kernel's ephemeral range: a port inside it can be the
# local port of an outgoing connection (not a listener, so a connect test does not see it) and
# clickhouse-server then exits 70 at once with nothing logged (a CI run bailed on "the shards
# did not start" that way). Any socket on it, in any state (/proc/net/tcp*), rules a port out.
free_port() {
    local p low hex
    low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null)
    [ "${low:-0}" -gt 21000 ] 2>/dev/null || low=32768
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % (low - 20000)))
        hex=$(printf ':%04X ' "$p")
        grep -q -- "$hex" /proc/net/tcp /proc/net/tcp6 2>/dev/null && continue
        (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return 0; }
    done
    return 1
}

ch_start() {
    local name=$1 cluster=${2:-} dir=$TMP/ch-$1 http tcp
    http=$(eval echo "\${CH_HTTP_$name:-}")
    tcp=$(eval echo "\${CH_TCP_$name:-}")
    [ -n "$http" ] || http=$(free_port) || return 1
    [ -n "$tcp" ] || tcp=$(free_port) || return 1
    mkdir -p "$dir/data" "$dir/tmp" "$dir/log"
    cat > "$dir/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/log/server.log</log><errorlog>$dir/log/error.log</errorlog></logger>
  <http_port>$http</http_port>
  <tcp_port>$tcp</tcp_port>
  <listen_host>127.0.0.1</listen_host>
  <path>$dir/data/</path>
  <tmp_path>$dir/tmp/</tmp_path>
  <users_config>/etc/clickhouse-server/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>53687091</mark_cache_size>
  <remote_servers>$cluster</remote_servers>
</yandex>
EOF
    eval "CH_HTTP_$name=$http CH_TCP_$name=$tcp"
    # A restart on the same ports and data right after a stop has (rarely, twice in CI) ended at
    # once with nothing logged: such an early exit is retried, up to three starts.
    local try pid rc=
    for try in 1 2 3; do
        "$CH_SERVER" --config-file="$dir/config.xml" >>"$dir/log/stdout" 2>&1 &
        pid=$!
        echo "$pid" > "$dir/pid"
        # up to 60 s: a restart loads its tables first, which takes seconds on a loaded machine
        for _ in $(seq 600); do
            curl -fsS "http://127.0.0.1:$http/ping" >/dev/null 2>&1 && return 0
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            rc="still starting after 60 s"
            break
        fi
        wait "$pid"; rc="exited with status $? (start $try of 3)"
        rm -f "$dir/pid"
        sleep 1
    done
    fdiag "clickhouse-server $name did not answer on port $http: $rc" \
        "$(tail -5 "$dir/log/stdout" "$dir/log/error.log" "$dir/log/server.log" 2>/dev/null)"
    return 1
}

ch_stop() {
    local f=$TMP/ch-$1/pid pid
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    rm -f "$f"
    kill "$pid" 2>/dev/null || return 0
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
}

ch_sql() {
    local port
    port=$(eval echo "\$CH_HTTP_$1")
    curl -sS --fail-with-body --data-binary "$2" "http://127.0.0.1:$port/"
}

# The rollup tests' ranges (an array RANGES of `docker flame show` arguments, $FLAME the plugin):
# each range's folded output of STORE into PREFIX.N.folded
ch_outputs() { # STORE PREFIX
    local i rc=0
    for i in "${!RANGES[@]}"; do
        # shellcheck disable=SC2086 # a range is words
        "$FLAME" show ${RANGES[$i]} --store "$1" --format folded -o "$2.$i.folded" 2>>"$2.log" || rc=1
    done
    return $rc
}
# one check: every range's output of A and B the same bytes (else the ranges that differ)
ch_same_all() { # A B WHAT
    local i bad=
    for i in "${!RANGES[@]}"; do
        cmp -s "$1.$i.folded" "$2.$i.folded" || bad="$bad $i"
    done
    if [ -z "$bad" ]; then ok "$3"; else nok "$3"; fdiag "ranges that differ:$bad" "$(diff "$1.${bad# }.folded" "$2.${bad# }.folded" | head -4)"; fi
}
# the sum of a folded file's counts
ch_sum_of() { awk '{ n += $NF } END { print n + 0 }' "$1"; }

lib_cleanup_extra() {
    local d
    for d in "$TMP"/ch-*/; do
        [ -d "$d" ] && ch_stop "$(basename "$d" | sed 's/^ch-//')"
    done
}
