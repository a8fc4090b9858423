#!/usr/bin/env bash
# The Debian package (docs/PACKAGING.md): `make deb` builds it offline; its control data and
# contents; docker-flame(1) renders without warnings; `apt-get install ./docker-flame_*.deb`;
# the packaged plugin (found by the docker CLI in /usr/libexec/docker/cli-plugins, with a docker
# config dir of our own so no per-user plugin shadows it) imports the packaged sidecar tarball
# and profiles the fixture JVM; completion and Debian's CLI 20.10 work through it; `apt-get
# purge` leaves nothing: no dpkg record, no file, no directory it made, no sidecar image.
# The machine is restored on every path (a trap purges the package).
. "$(dirname "$0")/lib.sh"
engine_up || bail "no Docker engine answers"
[ "$(id -u)" = 0 ] || { skip_or_fail "installing a package needs root"; done_testing; }
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { skip_or_fail "no apt-get/dpkg-deb"; done_testing; }
PLUGDIR=/usr/libexec/docker/cli-plugins
# never clobber a real installation of this machine
if dpkg-query -W -f='${Status}' docker-flame 2>/dev/null | grep -q installed || [ -e "$PLUGDIR/docker-flame" ]; then
    bail "docker-flame is already installed system-wide here: not touching it"
fi
ensure_fixture_image || bail "cannot build the fixture image"
# the directories the package would create, as they are now (they must be so afterwards)
dirs_before=$(for d in /usr/libexec /usr/libexec/docker $PLUGDIR /usr/share/doc/docker-flame; do [ -d "$d" ] && echo "$d"; done)
APT=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q -o DPkg::Lock::Timeout=120)
installed=0
lib_cleanup_extra() {
    [ "$installed" = 1 ] && "${APT[@]}" purge docker-flame >/dev/null 2>&1
    [ "$installed" = 1 ] && dpkg --purge docker-flame >/dev/null 2>&1
}

deb=$(make -s -C "$ROOT" deb 2>"$TMP/make.err" | tail -1)
okif $? "make deb"
arch=$(dpkg --print-architecture)
is "$deb" "$BUILD/docker-flame_${VERSION}_${arch}.deb" "named docker-flame_<version>_<arch>.deb"
[ -f "$deb" ] || { fdiag "$(cat "$TMP/make.err")"; bail "no package built"; }
info=$(dpkg-deb -I "$deb")
like "$info" "Package: docker-flame" "control: the package name"
like "$info" "Version: $VERSION" "control: the version of the Makefile"
like "$info" "Depends: docker\.io \| docker-ce-cli, " "control: a docker CLI (Debian's or Docker's)"
like "$info" "libcurl4 \(>= [0-9.]+\).*libjansson4.*libmicrohttpd12.*libsqlite3-0" "control: the shared libraries the plugin links (libmicrohttpd: serve)"
like "$info" "postrm" "a postrm"
files=$(dpkg-deb -c "$deb" | awk '{ print $6 }')
for f in $PLUGDIR/docker-flame $PLUGDIR/flame-sidecar.tar $PLUGDIR/flame-sidecar.tar.sha256 \
    /usr/share/man/man1/docker-flame.1.gz; do
    printf '%s\n' "$files" | grep -qx "\.$f" && ok "contains $f" || nok "contains $f"
done
is "$(dpkg-deb -c "$deb" | awk '$2 != "root/root"' | wc -l)" 0 "every file owned by root"
dpkg-deb -x "$deb" "$TMP/x"
cmp -s "$TMP/x$PLUGDIR/flame-sidecar.tar" "$BUILD/flame-sidecar.tar"
okif $? "the sidecar tarball is the one built"
zcat "$TMP/x/usr/share/man/man1/docker-flame.1.gz" >"$TMP/df.1"
warn=$(groff -man -ww -z "$TMP/df.1" 2>&1)
is "$warn" "" "docker-flame(1): no roff warning"
man=$(MANWIDTH=100 man -l "$TMP/df.1" 2>/dev/null)
like "$man" "DOCKER FLAME DIFF" "docker-flame(1): a section per verb"
like "$man" "--normalize" "docker-flame(1): the verbs' options, from their --help"
like "$man" "-d, --duration DURATION" "docker-flame(1): the profile options"

# install it; a docker config dir of our own: no per-user plugin can shadow the packaged one
export DOCKER_CONFIG=$TMP/docker-config
mkdir -p "$DOCKER_CONFIG"
"${APT[@]}" install --no-install-recommends "$deb" >"$TMP/apt.log" 2>&1
rc=$?
installed=1
okif $rc "apt-get install ./docker-flame_*.deb"
[ $rc = 0 ] || fdiag "$(tail -20 "$TMP/apt.log")"
like "$(dpkg-query -W -f='${Status} ${Version}' docker-flame 2>&1)" "install ok installed $VERSION" "dpkg knows it"
path=$(docker info --format '{{range .ClientInfo.Plugins}}{{if eq .Name "flame"}}{{.Path}}{{end}}{{end}}' 2>/dev/null)
is "$path" "$PLUGDIR/docker-flame" "the docker CLI finds the packaged plugin"
is "$(docker flame --version 2>&1)" "docker-flame version $VERSION" "docker flame --version"
like "$(man -w docker-flame 2>/dev/null)" "docker-flame\.1" "man docker-flame finds the manual"
# the packaged plugin must import its own tarball: remove the image first
docker rmi -f "$SIDECAR_IMAGE" >/dev/null 2>&1
fx=$(fixture pid1) || bail "fixture pid1 did not start"
docker flame "$fx" -d 4 --format folded -o "$TMP/pkg.folded" 2>"$TMP/run.err"
rc=$?
okif $rc "a profile through the packaged plugin"
[ $rc = 0 ] || fdiag "$(cat "$TMP/run.err")"
like "$(cat "$TMP/pkg.folded" 2>/dev/null)" "FlameFixture" "the fixture's Java frames"
want=$(cat "$PLUGDIR/flame-sidecar.tar.sha256")
is "$(docker image inspect -f '{{index .Config.Labels "com.docker-flame.tar-sha256"}}' "$SIDECAR_IMAGE" 2>/dev/null)" \
    "$want" "the sidecar image came from the packaged tarball"
like "$(docker __complete flame "" 2>/dev/null)" $'\nrecord\t' "completion through the packaged plugin"
if [ -x /usr/bin/docker ] && /usr/bin/docker --version | grep -q ' 20\.'; then
    is "$(PATH=/usr/bin:$PATH docker flame --version 2>&1)" "docker-flame version $VERSION" "Debian's CLI 20.10 finds it too"
fi

# remove it: nothing left
"${APT[@]}" purge docker-flame >"$TMP/purge.log" 2>&1
okif $? "apt-get purge docker-flame"
installed=0
dpkg -L docker-flame >/dev/null 2>&1
okif $(( $? == 0 ? 1 : 0 )) "dpkg -L: the package is gone"
is "$(dpkg-query -W -f='${Status}' docker-flame 2>/dev/null)" "" "no dpkg record left (purged)"
left=$(printf '%s\n' "$files" | sed 's/^\.//' | while read -r f; do [ -n "$f" ] && [ -f "$f" ] && echo "$f"; done)
is "$left" "" "none of its files left"
dirs_after=$(for d in /usr/libexec /usr/libexec/docker $PLUGDIR /usr/share/doc/docker-flame; do [ -d "$d" ] && echo "$d"; done)
is "$dirs_after" "$dirs_before" "its directories as they were before"
docker image inspect "$SIDECAR_IMAGE" >/dev/null 2>&1
okif $(( $? == 0 ? 1 : 0 )) "purge removed the sidecar image it imported"
path=$(docker info --format '{{range .ClientInfo.Plugins}}{{if eq .Name "flame"}}{{.Path}}{{end}}{{end}}' 2>/dev/null)
is "$path" "" "the docker CLI no longer lists a flame plugin"
done_testing
