#!/bin/sh
# `make check-layers` (run by `make test`): the direction of the includes between the folders, as
# docs/PLUGIN.md "Files" and HACKING.md draw it. One rule a line below: which files, what their
# "..." includes may name (an extended regex over the included path), and why; a file that
# includes anything else is printed with its line and the why, and the check fails. System
# headers (<...>) are not looked at, except that the pure verbs must not reach libcurl or jansson:
# PURE_SRCS (build/libflamecmd.a's sources, from plugin/plugin.mk) are run through `$CC -M` and
# none of them may depend on <jansson.h> or <curl/curl.h>.
set -eu
cd "$(dirname "$0")/.."

H='[a-z0-9_]+[.]h' # a header's name
bad=$(mktemp)
trap 'rm -f "$bad"' EXIT

# rule FILES ALLOWED WHY (FILES: globs, unquoted on purpose)
rule() {
    files=$(for f in $1; do if [ -f "$f" ]; then printf '%s\n' "$f"; fi; done)
    [ -n "$files" ] || return 0
    awk -v allow="^($2)\$" -v why="$3" '
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
            if (inc !~ allow) printf "%s:%d: includes \"%s\": %s\n", FILENAME, FNR, inc, why
        }' $files >>"$bad"
}

rule 'common/*.[ch]' "common/$H" 'common/ is the bottom: it includes only itself'
rule 'flame/*.[ch]' "common/$H|flame/$H" 'flame/ (pure) knows no store, sidecar or plugin'
rule 'store/*.[ch]' "common/$H|flame/$H|store/$H" 'store/ knows no sidecar or plugin'
rule 'mounts/*.[ch]' "common/$H|mounts/$H" 'the agent knows only common/'
rule 'sidecar/*.[ch]' "common/$H|flame/$H|sidecar/$H|sidecar/recorder/recorder[.]h" \
    'the sidecar knows no plugin/, and the recorder only through its face, recorder/recorder.h'
rule 'sidecar/recorder/*.[ch]' "common/$H|flame/$H|sidecar/sidecar[.]h|sidecar/session[.]h|sidecar/recorder/$H|sidecar/recorder/bpf/$H|[a-z0-9_]+[.]bpf[.]h" \
    'the recorder knows of the rest of the sidecar only its bounds (sidecar.h) and session'
rule 'plugin/engine/*.[ch]' "common/$H|plugin/engine/$H" \
    'the Engine API client (plugin/engine/) knows no sidecar, no run, no verb'
rule 'plugin/run/*.[ch]' "common/$H|flame/$H|plugin/engine/$H|plugin/run/$H" \
    'a run (plugin/run/) knows no verb: it uses only the engine client and itself'
rule 'plugin/*.[ch]' "common/$H|flame/$H|store/$H|plugin/$H|plugin/engine/$H|plugin/out/$H|plugin/web/$H|plugin/run/(run|signals|spec|proto|sweep|profiler|progress)[.]h" \
    'a verb reaches a run through plugin/run/run.h (and its signals, labels, stream, sweep, profiler and progress line), never its insides; serve reaches plugin/web/'
rule 'plugin/out/*.[ch]' "common/$H|flame/$H|plugin/out/$H" \
    'outputs (plugin/out/) know no engine, no run, no verb'
rule 'plugin/web/*.[ch]' "common/$H|flame/$H|store/$H|plugin/out/$H|plugin/web/$H" \
    'serve (plugin/web/) reads the store and flame/, and writes through plugin/out/'

for f in ${PURE_SRCS:-}; do
    ${CC:-cc} -M -D_GNU_SOURCE -I. "$f" | tr ' \\' '\n\n' | grep -E '(^|/)(jansson|curl/curl)\.h$' |
        while read -r h; do
            printf '%s: reaches %s: build/libflamecmd.a needs neither jansson nor libcurl\n' "$f" "$h" >>"$bad"
        done
done

if [ -s "$bad" ]; then
    cat "$bad" >&2
    echo "check-layers: $(wc -l <"$bad") include(s) against the layers (docs/PLUGIN.md \"Files\")" >&2
    exit 1
fi
