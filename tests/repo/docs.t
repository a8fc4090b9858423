#!/usr/bin/env bash
# The documentation in step with the program and the tree (git's t0450 idea: the -h of every
# command against its documentation), read from the built plugin's --help and from git:
# - README.md's option table is exactly the profile verb's options (--help and --version apart),
#   each named by its long or its short form, and names no option the verb lacks;
# - every verb of `docker flame --help` is shown in README.md as `docker flame VERB`;
# - every option of every verb's --help is documented somewhere (README.md or docs/*.md, as
#   `--name` or, in backquotes, its short form);
# - the files tables of docs/PLUGIN.md and docs/SIDECAR.md name every file under plugin/ and
#   sidecar/, and no file that is not there.
. "$(dirname "$0")/../e2e/lib.sh"
cd "$ROOT" || bail "no repository"
P=$BUILD/docker-flame
[ -x "$P" ] || bail "build/docker-flame missing (make)"

# The options of a --help text (its "Options:" list, up to the first blank line): "long short"
# per line ("--pid -", "--output -o").
help_opts() {
    awk '/^Options[: ]/ { on = 1; next } on && /^$/ { exit } on' |
        grep -E '^ +(-[a-zA-Z], )?--[a-z0-9-]+' | sed -E 's/^ +(-([a-zA-Z]), )?--([a-z0-9-]+).*/--\3 -\2/'
}
verbs=$("$P" flame --help | sed -n 's/^        docker flame \([a-z|]*\) .*/\1/p' | tr '|' ' ')
[ -n "$verbs" ] || bail "no verbs in docker flame --help"

# ---- README.md's option table and the profile verb ----
table=$(awk '/^\| option \| default \|/ { on = 1; next } on && !/^\|/ { exit } on && !/^\| ---/' README.md)
[ -n "$table" ] || bail "README.md has no option table"
cells=$(printf '%s\n' "$table" | cut -d'|' -f2)
missing=
while read -r long short; do
    case $long in --help | --version) continue ;; esac
    printf '%s\n' "$cells" | grep -qE -- "(^|[^a-z-])$long([^a-z-]|\$)" && continue
    [ "$short" != - ] && printf '%s\n' "$cells" | grep -qF -- "\`$short" && continue
    missing="$missing $long"
done < <("$P" flame --help | help_opts)
is "${missing# }" "" "README.md's option table names every option of docker flame --help"
extra=
for o in $(printf '%s\n' "$cells" | grep -oE -- '--[a-z0-9-]+' | sort -u); do
    "$P" flame --help | help_opts | grep -q -- "^$o " || extra="$extra $o"
done
is "${extra# }" "" "README.md's option table names no option docker flame lacks"

# ---- the verbs ----
missing=
for v in $verbs; do
    grep -qE "docker flame $v( |\`|\$)" README.md || missing="$missing $v"
done
is "${missing# }" "" "README.md shows every verb of docker flame --help ($(echo $verbs | wc -w) verbs)"

# ---- every option of every verb, documented somewhere ----
missing=
for v in "" $verbs; do
    while read -r long short; do
        [ "$long" = --help ] && continue
        grep -qE -- "(^|[^a-z-])$long([^a-z-]|\$)" README.md docs/*.md && continue
        [ "$short" != - ] && grep -qF -- "\`$short" README.md docs/*.md && continue
        missing="$missing ${v:-flame}:$long"
    done < <("$P" flame $v --help | help_opts)
done
is "${missing# }" "" "every option of every verb is documented in README.md or docs/"

# ---- the files tables ----
files_table() { # DOC DIR: the file names its "## Files..." table names (a.[ch]: a.c and a.h), those
    # given as DIR's own (a name alone, or a path under one of DIR's folders: run/session.c)
    awk '/^## Files/ { on = 1; next } on && /^## / { exit } on && /^\|/' "$1" |
        grep -oE '`[a-z0-9_/.]+\.(c|h|\[ch\])`' | tr -d '`' |
        while read -r f; do
            case $f in */*) [ -d "$2/${f%%/*}" ] || continue ;; esac
            printf '%s\n' "${f##*/}"
        done | sed -E 's/^(.*)\.\[ch\]$/\1.c\n\1.h/' | sort -u
}
for pair in docs/PLUGIN.md:plugin docs/SIDECAR.md:sidecar; do
    doc=${pair%%:*} dir=${pair#*:}
    named=$(files_table "$doc" "$dir")
    tree=$(git ls-files -co --exclude-standard -- "$dir" | grep -E '\.[ch]$' | sed 's|.*/||' | sort -u)
    is "$(comm -13 <(printf '%s\n' "$named") <(printf '%s\n' "$tree") | tr '\n' ' ')" "" \
        "$doc's files table names every .c and .h under $dir/"
    is "$(comm -23 <(printf '%s\n' "$named") <(printf '%s\n' "$tree") | tr '\n' ' ')" "" \
        "$doc's files table names no file that is not under $dir/"
done

done_testing
