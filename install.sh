#!/usr/bin/env bash
# docker-flame set-up: install what the build and the runtime need (Debian apt), build everything,
# install the `docker flame` CLI plugin, make sure a Docker engine answers (starting Debian's
# dockerd if none does), load the sidecar image, then profile a demo JVM container and print where
# its flame graph is. Idempotent: a second run is quick and changes nothing that is already right.
#
#   ./install.sh              everything, then the demo
#   ./install.sh --no-demo    everything but the demo
#   ./install.sh --system     install the plugin for all users (/usr/local/lib/docker/cli-plugins)
#   ./install.sh --deps-only  only the apt packages (add --test-deps for the test suite's too)
set -euo pipefail
cd "$(dirname "$0")"
export PATH=$PATH:/usr/sbin:/sbin

demo=1 system=0 deps_only=0 test_deps=0
for a in "$@"; do
    case "$a" in
    --no-demo) demo=0 ;;
    --system) system=1 ;;
    --deps-only) deps_only=1 ;;
    --test-deps) test_deps=1 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown option '$a' (see ./install.sh --help)" >&2; exit 2 ;;
    esac
done
say() { printf 'docker-flame: %s\n' "$*"; }
die() { printf 'install.sh: %s\n' "$*" >&2; exit 1; }
t0=$(date +%s.%N)

# ---- 1. packages ---------------------------------------------------------------------------
pkgs=(gcc make pkg-config libc6-dev curl ca-certificates libcurl4-openssl-dev libjansson-dev
      libseccomp-dev libcap-dev linux-perf openjdk-17-jdk-headless
      libsqlite3-dev libssl-dev zlib1g-dev # these three: the profile store (store/store.mk)
      libmicrohttpd-dev # serve's HTTP server (plugin/plugin.mk, docs/SERVE.md)
      clang libbpf-dev libelf-dev) # the sidecar's compiled BPF program and its static libbpf (sidecar/sidecar.mk)
engine_answers() { curl -fsS --max-time 3 --unix-socket /var/run/docker.sock http://localhost/_ping >/dev/null 2>&1; }
# libc6-dbg: the demo image carries libc's debug file, so its flame graph names start_thread
# (docker-flame reads a target's own /usr/lib/debug; tests/fixtures/build.sh)
[ "$demo" = 1 ] && pkgs+=(libc6-dbg)
if ! command -v docker >/dev/null || { ! engine_answers && ! command -v dockerd >/dev/null; }; then
    pkgs+=(docker.io)
fi
# clickhouse-server: the store's tests start their own servers (tests/e2e/clickhouse-lib.sh)
# golang-go: `go tool pprof` reads our pprof files in tests/e2e/pprof-*.t
# bash-completion: Docker's bash completion script needs it (tests/e2e/complete.t); dpkg-dev
# (dpkg-shlibdeps: versioned Depends) and man-db: `make deb` and tests/e2e/package-deb.t;
# libc6-dbg + binutils: libc's debug file for the fixture image (tests/e2e/native-names.t)
[ "$test_deps" = 1 ] && pkgs+=(chromium libxml2-utils nodejs npm tmux socat python3 clang clang-format valgrind
                               clickhouse-server golang-go bash-completion dpkg-dev man-db libc6-dbg binutils)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# The machine may already provide node/npm outside apt (e.g. /usr/bin/node from another source).
if [ "${#missing[@]}" -gt 0 ]; then
    filtered=()
    for p in "${missing[@]}"; do
        case "$p" in nodejs) command -v node >/dev/null && continue ;; npm) command -v npm >/dev/null && continue ;; esac
        filtered+=("$p")
    done
    missing=("${filtered[@]+"${filtered[@]}"}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing packages: ${missing[*]} — run as root (sudo ./install.sh) or install them with apt-get"
    command -v apt-get >/dev/null || die "missing packages: ${missing[*]} and no apt-get here (docker-flame targets Debian 12)"
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/tmp/docker-flame-apt.log 2>&1 \
        || { tail -20 /tmp/docker-flame-apt.log >&2; die "apt-get install failed (log: /tmp/docker-flame-apt.log)"; }
fi
[ "$deps_only" = 1 ] && { say "packages ready"; exit 0; }

# ---- 2. build ------------------------------------------------------------------------------
say "building"
make -s -j"$(nproc)" all >/tmp/docker-flame-build.log 2>&1 || { tail -30 /tmp/docker-flame-build.log >&2; die "build failed (log: /tmp/docker-flame-build.log)"; }

# ---- 3. install the plugin -----------------------------------------------------------------
if [ "$system" = 1 ]; then
    plugdir=/usr/local/lib/docker/cli-plugins
else
    plugdir=${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins
fi
mkdir -p "$plugdir"
install -m 0755 build/docker-flame "$plugdir/docker-flame.tmp" && mv -f "$plugdir/docker-flame.tmp" "$plugdir/docker-flame"
# The sidecar image travels next to the plugin; the plugin imports it into whichever engine it
# talks to when the image is missing there (docs/PROTOCOL.md).
install -m 0644 build/flame-sidecar.tar "$plugdir/flame-sidecar.tar.tmp" && mv -f "$plugdir/flame-sidecar.tar.tmp" "$plugdir/flame-sidecar.tar"
install -m 0644 build/flame-sidecar.tar.sha256 "$plugdir/flame-sidecar.tar.sha256"
if [ -n "${SUDO_UID:-}" ] && [ "$system" = 0 ]; then chown -R "$SUDO_UID:$SUDO_GID" "$plugdir"; fi
say "installed the plugin as $plugdir/docker-flame"

# ---- 4. a Docker engine ----------------------------------------------------------------------
state=$(scripts/engine.sh start) || die "no Docker engine answers and dockerd could not be started"
if [ "$state" = started ]; then
    say "no Docker engine was running: started dockerd (pid $(cat /run/docker-flame-dockerd.pid)); stop it with: $(pwd)/scripts/engine.sh stop"
fi

# ---- 5. the sidecar image ----------------------------------------------------------------------
VERSION=$(sed -n 's/^VERSION *:= *//p' Makefile)
want=$(sha256sum build/flame-sidecar.tar | cut -c1-16)
have=$(docker image inspect -f '{{index .Config.Labels "com.docker-flame.tar-sha256"}}' "docker-flame-sidecar:$VERSION" 2>/dev/null || true)
if [ "$have" != "$want" ]; then
    docker import --change "LABEL com.docker-flame.tar-sha256=$want" build/flame-sidecar.tar "docker-flame-sidecar:$VERSION" >/dev/null \
        || die "could not load the sidecar image into the engine"
    say "loaded the sidecar image docker-flame-sidecar:$VERSION ($(du -m build/flame-sidecar.tar | cut -f1) MB)"
fi
awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "docker-flame: set-up done in %.1f s\n", b - a }'

# ---- 6. the demo -----------------------------------------------------------------------------
[ "$demo" = 1 ] || exit 0
tests/fixtures/build.sh >/dev/null || die "could not build the demo JVM image"
docker rm -f docker-flame-demo >/dev/null 2>&1 || true
tests/fixtures/run.sh pid1 docker-flame-demo >/dev/null || die "the demo JVM container did not start"
svg=$(pwd)/docker-flame-demo.svg
say "profiling the demo JVM container 'docker-flame-demo' for 10 s"
rc=0
docker flame docker-flame-demo -d 10 -o "$svg" || rc=$?
docker rm -f docker-flame-demo >/dev/null 2>&1 || true
[ "$rc" = 0 ] || die "the demo profile failed (exit $rc)"
say "demo flame graph: $svg (open it in a browser)"
