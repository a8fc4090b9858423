#!/usr/bin/env bash
# The profile store's size on a real compiler's deep, varied stacks (fixture `compiler`: javac in
# a loop, tests/fixtures/README.md): `docker flame record` at the defaults (10-s windows, 49 Hz)
# keeps the store a small part of the text of the stacks it holds (frames stored once, stacks as
# prefix-sharing paths: docs/STORE.md), its WAL small while it writes, and `ls`'s SIZE adds up to
# the size on disk. Before: each new stack's whole text was stored (a newcomer measured 490 KB a
# window) and the WAL grew to 16 MiB beside the file.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture compiler) || bail "fixture compiler did not start"
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
DB=$TMP/size.db
stored() { local n; n=$(grep -c "stored (" "$1" 2>/dev/null); [ "${n:-0}" -ge "$2" ]; }
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }

timeout -k 10 600 docker flame record "$fx" --store "$DB" >out 2>err &
pid=$!
# the WAL beside the file, looked at every half second while the recorder writes
wal_max=0
for _ in $(seq 1200); do
    w=$(size_of "$DB-wal")
    [ "$w" -gt "$wal_max" ] && wal_max=$w
    stored err 6 && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.5
done
if stored err 6; then ok "six 10-s windows stored"; else nok "six 10-s windows stored"; fdiag "$(cat err)"; fi
ctrl_c "$pid"
wait $pid
is "$?" 0 "Ctrl-C: exit 0"
check "the WAL stayed under 1 MiB while recording (at most $wal_max bytes)" test "$wal_max" -le $((1 << 20))

file=$(size_of "$DB")
docker flame show "$fname" --store "$DB" --since 1h --format folded -o all.folded 2>show.txt
okif $? "show of the recording"
# the text of every distinct stack stored, and how deep they are
text=$(awk '{ t += length($0) - length($NF) - 1 } END { print t + 0 }' all.folded)
stacks=$(wc -l <all.folded)
depth=$(awk -F';' '{ d += NF } END { print (NR ? int(d / NR) : 0) }' all.folded)
diag "$(cat show.txt)" "$stacks distinct stacks, $depth frames deep on average, $text bytes of text; the file: $file bytes"
check "deep stacks ($depth frames on average)" test "$depth" -ge 40
# SQLite's fixed pages (a page a table and index: 16 KiB each) are most of a small store: what
# an empty store of this version takes is not counted, and pages are filled 16 KiB at a time
docker flame ls --store "$TMP/empty.db" >/dev/null 2>&1
empty=$(size_of "$TMP/empty.db")
check "the store's growth ($file - $empty bytes) is at most a fifth of its stacks' text ($text bytes), plus 32 KiB" \
    test $((file - empty)) -le $((text / 5 + (32 << 10)))

docker flame ls --store "$DB" >ls.txt 2>&1
diag "$(cat ls.txt)"
# one JVM recorded: its line's SIZE is the whole store, as the footer says
size=$(awk -v c="$fname" '$1 == c { print $(NF - 1), $NF }' ls.txt)
like "$(tail -1 ls.txt)" "stacks, $size on disk" "ls: the JVM's SIZE ($size) adds up to the store's size on disk"
done_testing
