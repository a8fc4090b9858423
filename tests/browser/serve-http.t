#!/usr/bin/env bash
# `docker flame serve`'s HTTP surface, with curl, on a store written by build/store-gen (no Docker,
# no browser): it listens on 127.0.0.1 only; the token in the printed URL becomes a SameSite=Strict
# HttpOnly cookie and leaves the address bar; no token or a wrong one is 401; a foreign or missing
# Host is 403 (DNS rebinding); anything but GET/HEAD is 405; no CORS header, also for a preflight;
# path traversal is 404; an oversized URL is refused; a bad query is a 400 with a JSON error; a
# non-loopback --listen warns and refuses --no-token; an export is exactly `show`'s bytes; Ctrl-C
# stops it with status 0; the store is opened read-only (a missing one is not created, nothing
# written).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=build/docker-flame
GEN=build/store-gen
n=0
failed=0
ok() { # ok COND-STATUS NAME [DIAG]
    n=$((n + 1))
    if [ "$1" -eq 0 ]; then echo "ok $n - $2"; else
        failed=$((failed + 1))
        echo "not ok $n - $2"
        [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/#   /'
    fi
}
is() { [ "$1" = "$2" ]; ok $? "$3" "got:  $1
want: $2"; }
for b in "$BIN" "$GEN"; do
    if [ ! -x "$b" ]; then
        [ "${CI:-}" = true ] && { echo "not ok 1 - $b missing (CI=true: required)"; echo 1..1; exit 1; }
        echo "1..0 # SKIP $b missing: run make"
        exit 0
    fi
done
command -v curl >/dev/null || { echo "1..0 # SKIP curl missing"; exit 0; }

unset GLIBC_TUNABLES # the checks of serve's own tunable set theirs
tmp=$(mktemp -d "${TMPDIR:-/tmp}/serve-http.XXXXXX")
srv=
cleanup() {
    [ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT

store=$tmp/p.db
$GEN --store "$store" --container web --windows 30 --start -40m --workload many --stacks 300 \
    --samples 300 --seed 1 >/dev/null 2>&1
ok $? "store-gen wrote a store"
# the same container's wall windows (record --mode wall): values in ns
$GEN --store "$store" --container web --windows 30 --start -40m --workload many --stacks 300 \
    --samples 300 --seed 2 --type wall >/dev/null 2>&1
ok $? "and wall windows"
sum_before=$(sha256sum "$store")

# -- read-only: a missing store is an error, not a new file
timeout -s INT 20 $BIN serve --store "$tmp/none.db" >/dev/null 2>"$tmp/err0" # a server that starts serves
is "$?" 8 "no store there: exit 8"
[ ! -e "$tmp/none.db" ]; ok $? "and none created" "$(cat "$tmp/err0")"

# serve STDERR-FILE ARGS...: starts the server in the background ($srv), reads its URL ($url)
serve() {
    local errf=$1
    shift
    mkfifo "$tmp/url.$n"
    $BIN serve --store "$store" "$@" >"$tmp/url.$n" 2>"$errf" &
    srv=$!
    url=
    # the URL is the first line on stdout: wait for it (bounded), not for a time
    read -r -t 30 url <"$tmp/url.$n"
}

serve "$tmp/err" --listen 127.0.0.1:0
[ -n "$url" ]; ok $? "serve printed a URL: $url" "$(cat "$tmp/err")"
port=$(sed -n 's#^http://127\.0\.0\.1:\([0-9]*\)/?token=.*#\1#p' <<<"$url")
token=${url#*token=}
[ -n "$port" ] && [ ${#token} -eq 64 ]; ok $? "the URL is http://127.0.0.1:PORT/?token=<64 hex>"
base=http://127.0.0.1:$port
ck="docker_flame_$port=$token"
# its heap in huge pages (plugin/main.c serve_with_huge_pages): the process started is the one
# serving, run again by itself with glibc's tunable (the other two serves below: a user's own
# tunables are kept, a user's hugetlb setting wins)
# (glibc 2.26-2.38 end each tunable's value with a NUL in place as they read them:
# /proc/PID/environ then shows "a=1:b=2" as "a=1", "b=2"; later ones leave it whole: both split)
tun() { tr '\0:' '\n\n' <"/proc/$1/environ" | sed 's/^GLIBC_TUNABLES=//' | grep '^glibc\.' | sort | paste -sd' '; }
is "$(tun "$srv")" "glibc.malloc.hugetlb=1" "serve runs with glibc.malloc.hugetlb=1, the same pid"
code() { curl -s -o /dev/null -w '%{http_code}' "$@"; }

# -- where it listens
listening=$(ss -Hltn "sport = :$port" | awk '{print $4}')
is "$listening" "127.0.0.1:$port" "listening on 127.0.0.1:$port only"
other=$(hostname -I 2>/dev/null | tr ' ' '\n' | grep -v '^127\.' | grep -v : | head -1)
if [ -n "$other" ]; then
    curl -s -m 5 -o /dev/null "http://$other:$port/" -H "Host: 127.0.0.1:$port"
    [ $? -eq 7 ]; ok $? "this machine's address $other: connection refused"
fi

# -- the token
is "$(code "$base/")" 401 "no token: 401"
is "$(code "$base/api/v1/sources")" 401 "no token, API: 401"
# the token with its last digit changed (to 0, or to 1 when it is 0: one token in 16 ends in 0,
# and "${token%?}0" was then the right token, 303; a CI run failed so)
wrong=${token%?}0; [ "$wrong" = "$token" ] && wrong=${token%?}1
is "$(code "$base/?token=$wrong")" 401 "a wrong token: 401"
is "$(code -b "docker_flame_$port=${token%?}x" "$base/")" 401 "a wrong cookie: 401"
hdr=$(curl -s -D - -o /dev/null "$base/?token=$token&c=web" | tr -d '\r')
grep -q '^HTTP/1.1 303' <<<"$hdr"; ok $? "the token URL: 303" "$hdr"
grep -qx "Set-Cookie: docker_flame_$port=$token; HttpOnly; SameSite=Strict; Path=/" <<<"$hdr"
ok $? "the token becomes an HttpOnly SameSite=Strict cookie" "$hdr"
grep -qx 'Location: /?c=web' <<<"$hdr"; ok $? "and leaves the URL (the rest kept)" "$hdr"
is "$(code -b "$ck" "$base/")" 200 "the cookie: 200"
is "$(code -H "Authorization: Bearer $token" "$base/api/v1/sources")" 200 "a Bearer token: 200"

# -- Host (DNS rebinding: the page of another site sends its own name)
is "$(code -b "$ck" -H "Host: evil.example:$port" "$base/")" 403 "a foreign Host: 403"
is "$(code -b "$ck" -H "Host: evil.example" "$base/api/v1/sources")" 403 "a foreign Host without port: 403"
is "$(code -b "$ck" -H "Host:" "$base/")" 403 "no Host: 403"
is "$(code -b "$ck" -H "Host: 127.0.0.1:$((port == 65535 ? 1 : port + 1))" "$base/")" 403 \
    "a loopback Host with another port: 403"
is "$(code -b "$ck" -H "Host: localhost:$port" "$base/")" 200 "localhost:PORT: 200"
is "$(code -H "Host: evil.example:$port" "$base/?token=$token")" 403 "the token URL under a foreign Host: 403"

# -- methods, CORS
for m in POST PUT DELETE PATCH OPTIONS; do
    is "$(code -b "$ck" -X $m "$base/api/v1/sources")" 405 "$m: 405"
done
allow=$(curl -s -D - -o /dev/null -b "$ck" -X POST "$base/" | tr -d '\r' | grep -i '^Allow:')
is "$allow" "Allow: GET, HEAD" "405 says Allow: GET, HEAD"
all=$(for u in / /api/v1/sources /app.js /nosuch; do
    curl -s -D - -o /dev/null -b "$ck" -H "Origin: http://evil.example" "$base$u"
    curl -s -D - -o /dev/null -b "$ck" -X OPTIONS -H "Origin: http://evil.example" \
        -H "Access-Control-Request-Method: GET" "$base$u"
done | tr -d '\r')
! grep -qi '^Access-Control-' <<<"$all"; ok $? "no Access-Control-* header anywhere (a preflight included)" \
    "$(grep -i '^Access-Control-' <<<"$all")"
h=$(curl -s -D - -o /dev/null -b "$ck" "$base/" | tr -d '\r')
grep -q "^Content-Security-Policy: default-src 'none'; script-src 'self'" <<<"$h"
ok $? "a strict Content-Security-Policy" "$h"
grep -q '^X-Frame-Options: DENY' <<<"$h" && grep -q '^X-Content-Type-Options: nosniff' <<<"$h"
ok $? "no framing, no sniffing"

# -- paths
for p in '/../../../../etc/passwd' '/%2e%2e/%2e%2e/etc/passwd' '/..%2f..%2fetc%2fpasswd' \
    '/api/v1/../../etc/passwd' '/app.js/../../../etc/passwd' '//etc/passwd'; do
    out=$(curl -s --path-as-is -w '\n%{http_code}' -b "$ck" "$base$p")
    c=${out##*$'\n'}
    [ "$c" = 404 ] || [ "$c" = 400 ]; ok $? "traversal $p: $c" "$(head -c 200 <<<"$out")"
    ! grep -q 'root:' <<<"$out"; ok $? "traversal $p: no file content"
done
is "$(code -b "$ck" "$base/api/v1/nosuch")" 404 "an unknown endpoint: 404"

# -- sizes
long=$(head -c 300 /dev/zero | tr '\0' a)
is "$(code -b "$ck" "$base/$long")" 414 "a 300-byte path: 414"
huge=$(head -c 40000 /dev/zero | tr '\0' a)
c=$(code -b "$ck" "$base/api/v1/flamegraph?q=$huge")
[ "$c" = 414 ] || [ "$c" = 431 ]; ok $? "a 40 KB URL refused: $c"
body=$(curl -s -b "$ck" "$base/api/v1/flamegraph?since=yesterday")
c=$(code -b "$ck" "$base/api/v1/flamegraph?since=yesterday")
is "$c" 400 "a bad query: 400"
grep -q '^{"error":"since: ' <<<"$body"; ok $? "with a JSON error naming the key" "$body"
pairs=$(for i in $(seq 70); do printf 'icase=1&'; done)
is "$(code -b "$ck" "$base/api/v1/flamegraph?$pairs")" 400 "70 parameters: 400"

# -- an export is show's bytes (the folded total is the graph's)
now=$(date -u +%s)
si=$(date -u -d "@$((now - 3600))" +%Y-%m-%dT%H:%M:%SZ)
un=$(date -u -d "@$now" +%Y-%m-%dT%H:%M:%SZ)
curl -s -b "$ck" -o "$tmp/a.folded" "$base/api/v1/export?c=web&since=$si&until=$un&format=folded"
$BIN show --store "$store" web --since "$si" --until "$un" --format folded -o "$tmp/b.folded" 2>/dev/null
cmp -s "$tmp/a.folded" "$tmp/b.folded"; ok $? "export folded = show --format folded"
want=$(awk '{s += $NF} END {print s}' "$tmp/b.folded")
got=$(curl -s -b "$ck" "$base/api/v1/flamegraph?c=web&since=$si&until=$un&nodes=20" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["tree"]["total"])')
is "$got" "$want" "the graph's total = the folded total ($want samples), with the graph cut to 20 nodes"
# where a graph's time went, for the page's and the bench's figures: the merge (cached now), the
# search, the call tree, the JSON; a table has no such line
st=$(curl -s -D - -o /dev/null -b "$ck" "$base/api/v1/flamegraph?c=web&since=$si&until=$un&nodes=21" |
    tr -d '\r' | grep -i '^Server-Timing:')
grep -Eqx 'Server-Timing: merge;dur=[0-9.]+, search;dur=[0-9.]+, tree;dur=[0-9.]+, json;dur=[0-9.]+' <<<"$st"
ok $? "a graph says where its time went (Server-Timing)" "$st"
st=$(curl -s -D - -o /dev/null -b "$ck" "$base/api/v1/table?c=web&since=$si&until=$un" | tr -d '\r')
! grep -qi '^Server-Timing:' <<<"$st"; ok $? "a table does not"

# -- a profile type: only the words of --mode; a stored type's exports are show --mode's bytes
body=$(curl -s -b "$ck" "$base/api/v1/flamegraph?type=bogus")
is "$(code -b "$ck" "$base/api/v1/flamegraph?type=bogus")" 400 "an unknown type: 400"
is "$body" '{"error":"type: a profile type: cpu, wall, offcpu, alloc or lock"}' "saying which types there are"
for f in folded svg pprof speedscope; do
    hdr=$(curl -s -D - -b "$ck" -o "$tmp/w.$f" \
        "$base/api/v1/export?c=web&since=$si&until=$un&format=$f&type=wall" | tr -d '\r')
    $BIN show --store "$store" web --mode wall --since "$si" --until "$un" --format $f \
        -o "$tmp/ws.$f" 2>/dev/null
    cmp -s "$tmp/w.$f" "$tmp/ws.$f"; ok $? "export $f of type wall = show --mode wall --format $f"
done
grep -q 'filename="flame-web-[0-9-]*\.wall\.speedscope\.json"' <<<"$hdr"
ok $? "named as show names it (.wall. before the extension)" "$(grep -i disposition <<<"$hdr")"
cmp -s "$tmp/w.folded" "$tmp/b.folded"; [ $? -ne 0 ]; ok $? "and not the cpu windows' bytes"
got=$(curl -s -b "$ck" "$base/api/v1/flamegraph?c=web&since=$si&until=$un&type=wall" |
    python3 -c 'import json,sys; r=json.load(sys.stdin)["range"]; print(r["type"], r["unit"], r["total"])')
is "$got" "wall ns $(awk '{s += $NF} END {print s}' "$tmp/ws.folded")" "a wall graph: its type, unit (ns) and show's total"

# -- Ctrl-C
kill -INT "$srv"
wait "$srv"
is "$?" 0 "SIGINT: exit 0"
srv=

is "$(sha256sum "$store")" "$sum_before" "the store's file is byte for byte as before"

# -- other addresses
GLIBC_TUNABLES=glibc.malloc.arena_max=4 serve "$tmp/err2" --listen 0.0.0.0:0
is "$(tun "$srv")" "glibc.malloc.arena_max=4 glibc.malloc.hugetlb=1" "a user's tunables are kept"
grep -q 'warning: listening on 0.0.0.0, not only on this machine' "$tmp/err2"
ok $? "--listen 0.0.0.0 warns" "$(cat "$tmp/err2")"
grep -q 'token=' <<<"$url"; ok $? "and keeps the token" "$url"
kill -INT "$srv"
wait "$srv"
srv=
$BIN serve --store "$store" --listen 0.0.0.0:0 --no-token >/dev/null 2>"$tmp/err3"
is "$?" 2 "--no-token with a non-loopback --listen: exit 2"
grep -q 'no-token only with a loopback' "$tmp/err3"; ok $? "saying why" "$(cat "$tmp/err3")"
$BIN serve --store "$store" --listen 'nonsense:x' >/dev/null 2>"$tmp/err4"
is "$?" 2 "a bad --listen: exit 2"
# --mode: the URL opens on that type (the page's type=), kept past the token's redirect
GLIBC_TUNABLES=glibc.malloc.hugetlb=0 serve "$tmp/err5" --listen 127.0.0.1:0 web --mode wall
is "$(tun "$srv")" "glibc.malloc.hugetlb=0" "a user's glibc.malloc.hugetlb is theirs"
grep -q '&c=web&type=wall$' <<<"$url"; ok $? "serve --mode wall: the URL says type=wall" "$url"
hdr=$(curl -s -D - -o /dev/null "$url" | tr -d '\r')
grep -qx 'Location: /?c=web&type=wall' <<<"$hdr"; ok $? "and keeps it past the token" "$hdr"
kill -INT "$srv"
wait "$srv"
srv=
$BIN serve --store "$store" --mode gpu >/dev/null 2>"$tmp/err6"
is "$?" 2 "serve --mode gpu: exit 2"

echo "1..$n"
exit $((failed > 0))
