#!/usr/bin/env bash
# The Debian package, from a finished build, offline (dpkg-deb):
#   packaging/deb.sh BUILD VERSION    -> BUILD/docker-flame_VERSION_ARCH.deb (its path on stdout)
# Layout: the plugin in /usr/libexec/docker/cli-plugins (a system plugin directory of both
# Debian's docker.io CLI 20.10 and Docker's CLI 23+), the sidecar tarball and its .sha256 beside
# it (plugin/run/image.c looks next to the plugin's real path), docker-flame(1) from the --help texts
# (packaging/manpage.sh). No completion file: Docker's own bash/zsh/fish completion asks the
# plugin (docs/COMPLETION.md). Depends: a docker CLI, and the shared libraries the plugin links
# (dpkg-shlibdeps when dpkg-dev is there, else the packages that own them, unversioned).
set -euo pipefail
build=$(cd "${1:?usage: deb.sh BUILD VERSION}" && pwd)
version=${2:?usage: deb.sh BUILD VERSION}
here=$(cd "$(dirname "$0")" && pwd)
arch=$(dpkg --print-architecture)
plugdir=usr/libexec/docker/cli-plugins
work=$build/deb
root=$work/root
rm -rf "$work"
mkdir -p "$root/DEBIAN" "$root/$plugdir" "$root/usr/share/man/man1" "$root/usr/share/doc/docker-flame"
for f in docker-flame flame-sidecar.tar flame-sidecar.tar.sha256; do
    [ -s "$build/$f" ] || { echo "deb.sh: $build/$f missing: run make first" >&2; exit 1; }
done
# the plugin without its debug sections (a third of its size); the tarball as built
install -m 0755 "$build/docker-flame" "$root/$plugdir/docker-flame"
strip --strip-unneeded "$root/$plugdir/docker-flame"
install -m 0644 "$build/flame-sidecar.tar" "$build/flame-sidecar.tar.sha256" "$root/$plugdir/"
"$here/manpage.sh" "$build/docker-flame" "$version" | gzip -9n >"$root/usr/share/man/man1/docker-flame.1.gz"
gzip -9n <"$here/../README.md" >"$root/usr/share/doc/docker-flame/README.md.gz"

libs_depends() {
    if command -v dpkg-shlibdeps >/dev/null; then
        # dpkg-shlibdeps wants a source tree: a debian/control naming the package is enough
        local src=$work/src
        mkdir -p "$src/debian"
        printf 'Source: docker-flame\n\nPackage: docker-flame\nArchitecture: any\n' >"$src/debian/control"
        (cd "$src" && dpkg-shlibdeps -O "$root/$plugdir/docker-flame" 2>/dev/null) | sed -n 's/^shlibs:Depends=//p'
    else
        ldd "$build/docker-flame" | awk '$3 ~ /^\// { print $3 }' | while read -r lib; do
            dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null
        done | cut -d: -f1 | sort -u | paste -sd, | sed 's/,/, /g'
    fi
}
libs=$(libs_depends)
[ -n "$libs" ] || { echo "deb.sh: cannot work out the shared library dependencies" >&2; exit 1; }

cat >"$root/DEBIAN/control" <<CONTROL
Package: docker-flame
Version: $version
Architecture: $arch
Maintainer: docker-flame developers <docker-flame@users.noreply.github.com>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: docker.io | docker-ce-cli, $libs
Suggests: linux-perf
Section: devel
Priority: optional
Homepage: https://github.com/docker-flame/docker-flame
Description: Docker CLI plugin: flame graphs of the JVMs in a container
 docker flame CONTAINER profiles the JVMs running in a container with perf, from
 a sidecar container that shares its PID namespace, and writes an interactive
 flame graph; nothing is installed in or restarted in the container. Also: diff
 and merge of profiles, a live top of the hottest methods, continuous recording
 into a profile store, and shell completion through the Docker CLI.
CONTROL
sed "s/@VERSION@/$version/g" "$here/postrm" >"$root/DEBIAN/postrm"
chmod 0755 "$root/DEBIAN/postrm"
(cd "$root" && find usr -type f -print0 | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
deb=$build/docker-flame_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
rm -rf "$work"
echo "$deb"
