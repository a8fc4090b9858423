#!/usr/bin/env bash
# The repository's own checks can fail: `make check-layers` (scripts/check-layers.sh) and
# `make check-symbols` (scripts/check-symbols.sh) pass on the tree, and each names the file when
# a wrong include or an unprefixed export is planted in a scratch copy of it. Nothing of the real
# tree or build is changed. Needs the release objects (make all).
. "$(dirname "$0")/../e2e/lib.sh"
cd "$ROOT" || bail "no repository"
[ -f "$BUILD/obj/plugin/cli.o" ] || bail "build/obj missing (make all)"
CC=${CC:-gcc}
PURE="plugin/cmd_fold.c plugin/cmd_render.c plugin/cmd_diff.c plugin/cmd_merge.c"

layers() { (cd "$1" && CC=$CC PURE_SRCS="$PURE" scripts/check-layers.sh); }
symbols() { (cd "$1" && scripts/check-symbols.sh "$2" plugin sidecar common mounts flame store); }

out=$(layers "$ROOT" 2>&1)
okif $? "check-layers passes on the tree${out:+: $out}"
out=$(symbols "$ROOT" "$BUILD" 2>&1)
okif $? "check-symbols passes on the tree's objects${out:+: $out}"

# A scratch copy of the sources (tracked and new files), to plant faults in.
tree=$TMP/tree
mkdir -p "$tree"
git ls-files -co --exclude-standard -- common flame store sidecar mounts plugin scripts |
    tar -cf - -T - | tar -xf - -C "$tree" || bail "cannot copy the tree"

plant() { # FILE LINE-AFTER INCLUDE: one more #include after the first line matching LINE-AFTER
    cp "$tree/$1" "$tree/$1.orig"
    sed -i "0,\\|$2|s||&\\n#include \"$3\"|" "$tree/$1"
}
unplant() { mv "$tree/$1.orig" "$tree/$1"; }

# file, a line of it to put the include after, the include, what the message must say
while IFS='|' read -r file after inc why; do
    plant "$file" "$after" "$inc"
    out=$(layers "$tree" 2>&1); rc=$?
    if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "^$file:[0-9]*: includes \"$inc\": .*$why"; then
        ok "check-layers names $file including $inc"
    else
        nok "check-layers names $file including $inc"
        fdiag "exit $rc:" "$out"
    fi
    unplant "$file"
done <<'EOF'
plugin/engine/demux.c|#include "plugin/engine/demux.h"|plugin/run/proto.h|knows no sidecar
plugin/run/image.c|#include "plugin/run/image.h"|plugin/cmd.h|knows no verb
plugin/cmd_top.c|#include "plugin/run/run.h"|plugin/run/session.h|never its insides
plugin/out/jsonw.c|#include "plugin/out/jsonw.h"|plugin/run/run.h|know no engine
flame/hash.c|#include "flame/hash.h"|plugin/cli.h|knows no store, sidecar or plugin
sidecar/record.c|#include "sidecar/session.h"|sidecar/recorder/percpu.h|only through its face
EOF

# jansson reached by a pure verb through a header
plant plugin/cmd_fold.c '#include "plugin/cli.h"' plugin/engine/engine.h
out=$(layers "$tree" 2>&1); rc=$?
like "$rc $out" '^[1-9][0-9]* .*plugin/cmd_fold\.c: reaches .*jansson\.h' \
    "check-layers names a pure verb that reaches <jansson.h>"
unplant plugin/cmd_fold.c

# An unprefixed export: one object of a scratch build compiled with one more function.
b=$TMP/build
mkdir -p "$b"
cp -r "$BUILD/obj" "$BUILD/pic" "$b/" || bail "cannot copy the objects"
for f in plugin/cli.c sidecar/perfmap.c common/atomic.c flame/hash.c store/when.c; do
    cp "$tree/$f" "$tree/$f.orig"
    printf '\nint leaked_helper(void);\nint leaked_helper(void)\n{\n    return 1;\n}\n' >>"$tree/$f"
    $CC -D_GNU_SOURCE -I"$tree" $(pkg-config --cflags libcurl jansson 2>/dev/null) -c "$tree/$f" \
        -o "$b/obj/${f%.c}.o" 2>"$TMP/cc.err" || { fdiag "$(cat "$TMP/cc.err")"; bail "cannot compile $f"; }
    out=$(symbols "$tree" "$b" 2>&1); rc=$?
    like "$rc $out" "^1 .*$f: exports leaked_helper, which does not start with" \
        "check-symbols names $f exporting leaked_helper"
    cp "$BUILD/obj/${f%.c}.o" "$b/obj/${f%.c}.o"
    mv "$tree/$f.orig" "$tree/$f"
done
cp "$tree/plugin/cmd_ls.c" "$tree/plugin/cmd_ls.c.orig"
printf '\nint cmd_ls_helper(void);\nint cmd_ls_helper(void)\n{\n    return 1;\n}\n' >>"$tree/plugin/cmd_ls.c"
$CC -D_GNU_SOURCE -I"$tree" -c "$tree/plugin/cmd_ls.c" -o "$b/obj/plugin/cmd_ls.o" $(pkg-config --cflags sqlite3 2>/dev/null) ||
    bail "cannot compile cmd_ls.c"
out=$(symbols "$tree" "$b" 2>&1); rc=$?
like "$rc $out" "^1 .*plugin/cmd_ls\.c: exports cmd_ls_helper" \
    "check-symbols: a verb file exports its entry point and option table only"

done_testing
