# Shared by tests/e2e/top-*.t: the plugin + the CURRENT sidecar build under a content-named tag
# (the shared docker-flame-sidecar:VERSION may predate `top`), the fixture, leftover checks.
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
if [ ! -f "$BUILD/flame-sidecar.tar" ]; then
    skip_or_fail "no sidecar: build/flame-sidecar.tar missing (make)"
    done_testing
fi
ensure_fixture_image || bail "cannot build the fixture image"
plugin_env
unset DOCKER_FLAME_SIDECAR_CAPS
export DOCKER_FLAME_SIDECAR_TAR=$BUILD/flame-sidecar.tar
export DOCKER_FLAME_SIDECAR_IMAGE=${FLAME_REAL_IMAGE:-docker-flame-sidecar:top-$(md5sum <"$BUILD/flame-sidecar.tar" | cut -c1-12)}
export DOCKER_FLAME_TOP_STATS=1
cd "$TMP"

# sidecars of this target still present (any state)
sidecars_of() { docker ps -aq --filter label=com.docker-flame.sidecar=1 --filter "label=com.docker-flame.target=$1" | wc -l; }
# until CMD succeeds or SECONDS pass: returns CMD's last status
wait_for() { wait_until "$@"; } # the name the top and record tests call
now_ms() { echo $(($(date +%s%N) / 1000000)); }
