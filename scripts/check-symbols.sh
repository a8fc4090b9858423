#!/bin/sh
# `make check-symbols` (run by `make test`): every symbol a file exports (what `nm -g` lists as
# defined in its object) starts with that file's prefix, so that no two files of one program can
# collide at link time (libflamecore.a goes into the plugin, the sidecar, flame-render and every
# unit test) and every function is found by grepping its prefix.
#   scripts/check-symbols.sh BUILD DIR...   checks the sources under each DIR (plugin sidecar ...)
# The table below: a file (a shell pattern over its path, where * also crosses '/'; the first
# line that matches wins) and the prefixes its exports may start with (an extended regex, ^ and
# the file's name without ".c" as {stem} added). A folder is checked only when it is named on the
# command line: CHECK_SYMBOLS_DIRS in the Makefile says which (every folder of the product).
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:?usage: check-symbols.sh BUILD DIR...}
shift

TABLE='
plugin/main.c                main$
plugin/render_main.c         main$
plugin/usage.c               flame_usage$
plugin/verbs.c               flame_verb|flame_nverbs$
plugin/cmd_profile.c         flame_cmd_profile$|flame_profile_verb$
plugin/cmd_*.c               flame_cmd_[a-z_]+$|cmd_[a-z_]+_grammar$
plugin/complete.c            cmpl_
plugin/recordings.c          recs_
plugin/record_loop.c         rec_
plugin/record_split.c        rec_split
plugin/engine/endpoint.c     ep_
plugin/out/output.c          out_
plugin/run/session.c         run_
plugin/run/signals.c         sig_
plugin/*                     {stem}_
sidecar/main.c               main$
sidecar/*                    sc_
common/err.c                 flame_
common/contract.c            ct_
common/*                     {stem}_
mounts/agent.c               Agent_
mounts/*                     agent_
flame/fold*.c                fold_|folder_
flame/profile*.c             profile_|prof_
flame/*                      {stem}_
store/sqlite*.c              sq_
store/clickhouse*.c          ch_
store/chtext.c               ch_
store/store_util.c           store_
store/*                      {stem}_
'

# prefix_of SRC: $prefix, the prefixes of the first line of the table that matches SRC, or "".
prefix_of() {
    prefix=
    set -f # the table's patterns are for `case`, not for the shell's globbing
    oldifs=$IFS
    IFS='
'
    for line in $TABLE; do
        pat=${line%%[[:space:]]*}
        # shellcheck disable=SC2254 # the table's patterns are patterns
        case $1 in $pat)
            prefix=${line##*[[:space:]]}
            break
            ;;
        esac
    done
    IFS=$oldifs
    set +f
}

bad=0
map=$(mktemp)
trap 'rm -f "$map"' EXIT
objs=
for dir in "$@"; do
    for src in $(find "$dir" -name '*.c' ! -name '*.bpf.c' | sort); do
        # *.bpf.c: BPF programs (clang -target bpf), carried as bytes in their loader's object
        case $src in
        mounts/*) obj=$BUILD/pic/${src%.c}.o ;;
        *) obj=$BUILD/obj/${src%.c}.o ;;
        esac
        if [ ! -f "$obj" ]; then
            echo "$src: no object $obj (make all first)" >&2
            bad=$((bad + 1))
            continue
        fi
        prefix_of "$src"
        if [ -z "$prefix" ]; then
            echo "$src: no line of the table in scripts/check-symbols.sh matches it" >&2
            bad=$((bad + 1))
            continue
        fi
        printf '%s %s %s\n' "$obj" "$src" "$(printf '%s' "$prefix" | sed "s/{stem}/$(basename "$src" .c)/g")" >>"$map"
        objs="$objs $obj"
    done
done
# One nm for every object: "OBJECT:ADDRESS TYPE NAME" lines.
if [ -n "$objs" ]; then
    # shellcheck disable=SC2086 # a list of paths
    n=$(nm -A -g --defined-only $objs | awk -v map="$map" '
        BEGIN { while ((getline l < map) > 0) { split(l, f, " "); src[f[1]] = f[2]; want[f[1]] = f[3] } }
        {
            o = $1; sub(/:[^:]*$/, "", o); sym = $NF
            if (sym !~ ("^(" want[o] ")")) {
                printf "%s: exports %s, which does not start with %s\n", src[o], sym, want[o] | "cat >&2"
                n++
            }
        }
        END { print n + 0 }')
    bad=$((bad + n))
fi
if [ "$bad" -gt 0 ]; then
    echo "check-symbols: $bad export(s) against the prefix rule (scripts/check-symbols.sh)" >&2
    exit 1
fi
