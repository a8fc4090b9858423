#!/bin/sh
# The page's files as C strings (plugin/web/web_assets.c includes the output):
#   plugin/web/embed.sh FILE... > web_ui.h
# Each FILE becomes a string literal (backslashes and quotes escaped, one line a line) and an entry
# of web_ui_files[]: its URL path "/<name>", its Content-Type by extension. Only sed and the
# shell: the build needs nothing else, and no network.
set -eu
echo '/* Generated from plugin/web/ui/ by plugin/web/embed.sh: do not edit. */'
echo '// clang-format off'
i=0
for f in "$@"; do
    echo "static const char web_ui_$i[] ="
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$f"
    echo '    ;'
    i=$((i + 1))
done
echo 'static const web_asset web_ui_files[] = {'
i=0
for f in "$@"; do
    name=$(basename "$f")
    case $name in
    *.html) type='text/html; charset=utf-8' ;;
    *.js) type='text/javascript; charset=utf-8' ;;
    *.css) type='text/css; charset=utf-8' ;;
    *.svg) type='image/svg+xml' ;;
    *) echo "embed.sh: $f: no type for this extension" >&2; exit 1 ;;
    esac
    echo "    {\"/$name\", \"$type\", web_ui_$i, sizeof web_ui_$i - 1},"
    i=$((i + 1))
done
echo '};'
