#!/usr/bin/env bash
# Build the sidecar image's rootfs tarball offline (imported as docker-flame-sidecar:VERSION):
#   /flame-sidecar, /usr/bin/perf + its ldd closure + ld-linux, the agent at
#   /opt/docker-flame/agent/libflameagent.so (optional: without it the sidecar falls back to
#   Compiler.perfmap and says so), an empty /tmp (0711: the plugin mounts a tmpfs there, and the
#   sidecar checks it, docs/HARDENING.md "Who can reach the sidecar").
# Usage: sidecar/build-rootfs.sh SIDECAR_BIN AGENT_SO OUT.tar
set -euo pipefail
bin=${1:?usage: build-rootfs.sh SIDECAR_BIN AGENT_SO OUT.tar}
agent=${2:?}
out=${3:?}
perf=${PERF_BIN:-/usr/bin/perf}
# Debian's /usr/bin/perf may be a wrapper script picking perf_<kernel>: use the real ELF.
if ! head -c4 "$perf" | grep -q ELF; then
    perf=$(ls /usr/bin/perf_* 2>/dev/null | sort -V | tail -1)
fi
stage=$(mktemp -d "${TMPDIR:-/tmp}/flame-sidecar-rootfs.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/bin" "$stage/opt/docker-flame/agent" "$stage/tmp" "$stage/lib64" "$stage/proc" \
    "$stage/dev" "$stage/sys" "$stage/etc"
chmod 0711 "$stage/tmp"
install -m 0755 "$bin" "$stage/flame-sidecar"
# Execute-only: exec of a file its user cannot read leaves the process non-dumpable (the kernel's
# would_dump), so perf, run unprivileged, cannot be opened through /proc/<pid>/{root,fd,mem} or
# ptraced by another process of its uid (a readable perf was dumpable again after execve).
install -m 0711 "$perf" "$stage/usr/bin/perf"
for f in $(ldd "$perf" | awk '/=>/ {print $3} /^\s*\/lib/ {print $1}' | grep '^/' | sort -u); do
    mkdir -p "$stage$(dirname "$f")"
    cp -L "$f" "$stage$f"
done
cp -L /lib64/ld-linux-x86-64.so.2 "$stage/lib64/"
if [ -f "$agent" ]; then
    install -m 0755 "$agent" "$stage/opt/docker-flame/agent/libflameagent.so"
else
    echo "build-rootfs.sh: warning: $agent not built: the image has no agent (Compiler.perfmap fallback only)" >&2
fi
# Root only: the unprivileged uid the sidecar drops to is chosen per run (harden.c) and has no
# entry; perf needs none.
printf 'root:x:0:0:root:/:/nonexistent\n' > "$stage/etc/passwd"
printf 'root:x:0:\n' > "$stage/etc/group"
# Strip debug info from the libraries (perf's closure is large); keep perf itself intact.
find "$stage/lib" "$stage/usr/lib" -name '*.so*' -type f -exec strip --strip-debug {} + 2>/dev/null || true
tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$stage" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "sidecar rootfs: $out ($(du -m "$out" | cut -f1) MB)"
