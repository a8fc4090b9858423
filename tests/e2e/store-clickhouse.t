#!/usr/bin/env bash
# The profile store on real ClickHouse servers (Debian's clickhouse-server, each with its own
# config and data directory under $TMP, on free ports of 127.0.0.1; no Docker engine needed):
# the same windows written into SQLite, into one server and through a two-shard Distributed
# table give the same `show` output (folded, SVG, timeline); stores of schema 2 (written by an
# older docker-flame) and 1 are refused by readers, migrated by a writer and read as before; windows sent twice
# (a spool drained twice) count once; a stopped server: the windows go to the local spool
# (bounded by spool_max) and reach the server when it is back; an unreachable server, one that
# refuses us, an unknown URL, a store of a newer version and an empty range: one line on stderr
# and the documented exit code each. Profile types (schema 4): wall windows beside cpu, selected by
# --mode, kept apart by compaction, the same as SQLite; a store of schema 3 read as all cpu.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse-lib.sh"
ch_test_setup

run_err() { "$@" >/dev/null 2>err.txt; echo $?; }
one_line() { [ "$(wc -l < err.txt)" = 1 ]; }

# The same windows for every store: absolute start times on a whole hour two hours ago, seeds.
T0=$(( ($(date +%s) / 3600 - 2) * 3600 * 1000 ))
T1=$((T0 + 3600 * 1000))
since=$(date -d "@$((T0 / 1000))" +%Y-%m-%dT%H:%M:%S%:z)
until=$(date -d "@$((T1 / 1000))" +%Y-%m-%dT%H:%M:%S%:z)
gen() { # STORE: 1 h of web (fixture stacks, some empty windows) and of api (2,000 stacks)
    "$GEN" --store "$1" --container web --workload fixture --samples 990 --seed 1 \
        --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
        --start "$T0" --windows 360 --empty-every 50 --batch 60 >/dev/null &&
        "$GEN" --store "$1" --container api --pid 7 --stacks 2000 --samples 500 --seed 2 \
            --start "$T0" --windows 360 --batch 60 >/dev/null
}
outputs() { # STORE PREFIX: folded, SVG and timeline of the hour, and of web's first minutes
    "$FLAME" show web api --store "$1" --since "$since" --until "$until" --format folded \
        -o "$2.folded" 2>"$2.log" &&
        "$FLAME" show web api --store "$1" --since "$since" --until "$until" -o "$2.svg" 2>>"$2.log" &&
        "$FLAME" show --store "$1" --since "$since" --until "$until" --timeline -o "$2.tl.svg" 2>>"$2.log" &&
        "$FLAME" show web --pid 1 --store "$1" --since "$since" --until "$(date -d "@$((T0 / 1000 + 300))" +%H:%M:%S)" \
            --format folded -o "$2.web5.folded" 2>>"$2.log"
}
same() { # A B WHAT
    if cmp -s "$1" "$2"; then ok "$3"; else nok "$3"; fdiag "$(diff "$1" "$2" | head -5)"; fi
}
as_sqlite() { # PREFIX WHO: each output of `outputs` the same as SQLite's
    same ref.folded "$1.folded" "$2, folded: the same stacks and counts as SQLite"
    same ref.svg "$1.svg" "$2, SVG: the same graph as SQLite"
    same ref.tl.svg "$1.tl.svg" "$2, timeline: the same picture as SQLite"
    same ref.web5.folded "$1.web5.folded" "$2, a few minutes of one JVM: the same as SQLite"
}

gen "$TMP/ref.db"
okif $? "1 h of web and api windows into SQLite"
outputs "$TMP/ref.db" ref
okif $? "show from SQLite: folded, SVG, timeline"

# ---- one server ----
ch_start one || bail "clickhouse-server one did not start"
ONE=clickhouse://127.0.0.1:$CH_HTTP_one/flame
gen "$ONE"
okif $? "the same windows into one ClickHouse server"
outputs "$ONE" one
okif $? "show from ClickHouse"
as_sqlite one "one server"
like "$(cat one.log)" "wrote one.svg \(720 windows" "the 720 windows of web and api"
"$FLAME" show web --store "$ONE" --since "$since" --until "$until" --format pprof -o one.pb.gz 2>>one.log
like "$(go tool pprof -raw one.pb.gz 2>&1)" 'Period: 10101010' "pprof from ClickHouse: the period of the windows' 99 Hz"
out=$("$FLAME" ls --store "$ONE")
okif $? "ls"
like "$out" "web .* 360 " "ls: web, 360 windows"
like "$out" "api .* 360 " "ls: api, 360 windows"
like "$out" "on disk \(clickhouse://127.0.0.1:$CH_HTTP_one/flame\)" "the footer names the server"

# compaction: the hour ended an hour ago, so its windows become 1-minute buckets, same sums
out=$("$FLAME" prune --store "$ONE" 2>&1)
okif $? "prune"
like "$out" "merged 720 windows into 120 buckets" "720 windows into 1-minute buckets ($out)"
"$FLAME" show web api --store "$ONE" --since "$since" --until "$until" --format folded -o pruned.folded 2>/dev/null &&
    "$FLAME" show web --pid 1 --store "$ONE" --since "$since" --until "$(date -d "@$((T0 / 1000 + 300))" +%H:%M:%S)" \
        --format folded -o pruned.web5.folded 2>/dev/null
okif $? "show after prune"
same ref.folded pruned.folded "after prune, folded: the same stacks and counts as SQLite"
same ref.web5.folded pruned.web5.folded "after prune, a few minutes of one JVM: the same as SQLite"

# ---- stores of older schemas: refused by readers, migrated by a writer ----
# Schema 2 (a stack's text per hash, stack_ids per run), as docker-flame 8525bde wrote it
# (tests/data/store/make-old.sh): its tables as they were, rows loaded from the dump.
V2_WINDOWS="(host String, container_id String, container_name String, image String, jvm_pid Int64, jvm_version String, start_ms Int64, end_ms Int64, frequency Int64, samples UInt64, level UInt8, run UInt64, ids Array(UInt8), ids_hi Array(UInt16), counts Array(UInt8), counts_hi Array(UInt32)) ENGINE = MergeTree PARTITION BY toYYYYMMDD(toDateTime(intDiv(start_ms, 1000))) ORDER BY (intDiv(start_ms, 3600000), container_name, container_id, jvm_pid, start_ms) SETTINGS index_granularity = 64"
load_v2() { # DB
    ch_sql one "CREATE DATABASE $1" &&
        ch_sql one "CREATE TABLE $1.meta (key String, value String) ENGINE = TinyLog" &&
        ch_sql one "CREATE TABLE $1.stacks (stack_hash UInt64, folded String) ENGINE = ReplacingMergeTree ORDER BY stack_hash" &&
        ch_sql one "CREATE TABLE $1.stack_ids (run UInt64, id UInt32, stack_hash UInt64) ENGINE = ReplacingMergeTree ORDER BY (run, id)" &&
        ch_sql one "CREATE TABLE $1.windows $V2_WINDOWS" || return 1
    local t
    for t in meta stacks stack_ids windows; do
        gunzip -c "$ROOT/tests/data/store/clickhouse-v2.$t.tsv.gz" |
            curl -fsS "http://127.0.0.1:$CH_HTTP_one/?query=INSERT%20INTO%20$1.$t%20FORMAT%20TabSeparated" --data-binary @- || return 1
    done
}
OLDRANGE=(--since 2026-11-25T08:00:00Z --until 2026-11-25T10:00:00Z)
gunzip -c "$ROOT/tests/data/store/old.folded.gz" >old.folded
gunzip -c "$ROOT/tests/data/store/old-web.folded.gz" >old-web.folded
load_v2 old2 && load_v2 src
okif $? "a store of schema 2 written by the previous docker-flame"
OLD2=clickhouse://127.0.0.1:$CH_HTTP_one/old2
# a reader neither writes nor migrates (docs/STORE.md, "Reading never writes"): it says what does
is "$(run_err "$FLAME" show --store "$OLD2" "${OLDRANGE[@]}")" 7 "a reader does not migrate it: exit 7"
like "$(cat err.txt)" "a store of version 2, this docker-flame reads version 4: a recorder upgrades it" "saying what does"
is "$(ch_sql one "SELECT max(toInt64(value)) FROM old2.meta WHERE key = 'schema_version'") $(ch_sql one "SELECT count() FROM system.tables WHERE database = 'old2' AND name = 'dict'")" \
    "2 0" "nothing made or changed by the reader"
"$FLAME" prune --retain 0 --no-compact --store "$OLD2" 2>old2.log
okif $? "prune --retain 0 --no-compact migrates it"
"$FLAME" show --store "$OLD2" "${OLDRANGE[@]}" --format folded -o old2.folded 2>>old2.log
okif $? "show from the migrated store"
same old.folded old2.folded "every container reads as the old code read it"
"$FLAME" show web --store "$OLD2" "${OLDRANGE[@]}" --format folded -o old2-web.folded 2>>old2.log
same old-web.folded old2-web.folded "web alone too"
is "$(ch_sql one "SELECT max(toInt64(value)) FROM old2.meta WHERE key = 'schema_version'")" 4 "the store says version 4 now"
is "$(ch_sql one "SELECT count() FROM old2.windows") $(ch_sql one "SELECT uniqExact(run) FROM old2.dict")" \
    "73 $(ch_sql one "SELECT uniqExact(run) FROM old2.stack_ids_v2")" "its 73 windows kept; a dictionary for each run"
out=$("$FLAME" ls --store "$OLD2")
like "$out" "^web .* 40 " "ls: web's 40 windows"
# Schema 1 (a row per window and stack), made from the same windows
V1_DAY="toYYYYMMDD(toDateTime(intDiv(start_ms, 1000)))"
V1_IDS="arrayMap(x -> toUInt32(x), arrayCumSum(arrayMap((v_lo, v_hi) -> toUInt32(v_lo) + 256 * toUInt32(v_hi), ids, ids_hi)))"
V1_COUNTS="arrayMap((v_lo, v_hi) -> toUInt64(v_lo) + 256 * toUInt64(v_hi), counts, counts_hi)"
V1_LABELS="host, container_id, container_name, image, jvm_pid, jvm_version, start_ms, end_ms, frequency, samples, level"
ch_sql one "CREATE DATABASE old" &&
    ch_sql one "CREATE TABLE old.meta (key String, value String) ENGINE = TinyLog" &&
    ch_sql one "INSERT INTO old.meta VALUES ('schema_version', '1')" &&
    ch_sql one "CREATE TABLE old.stacks ENGINE = ReplacingMergeTree ORDER BY stack_hash AS SELECT * FROM src.stacks" &&
    ch_sql one "CREATE TABLE old.samples (host String, container_id String, container_name String, image String, jvm_pid Int64, jvm_version String, start_ms Int64, end_ms Int64, frequency Int64, samples UInt64, level UInt8, stack_hash UInt64, count UInt64) ENGINE = MergeTree PARTITION BY $V1_DAY ORDER BY (intDiv(start_ms, 3600000), container_name, container_id, jvm_pid, start_ms, stack_hash)" &&
    ch_sql one "INSERT INTO old.samples SELECT $V1_LABELS, 0, 0 FROM src.windows" &&
    ch_sql one "INSERT INTO old.samples SELECT $V1_LABELS, stack_hash, c FROM (SELECT $V1_LABELS, run, id, c FROM src.windows ARRAY JOIN $V1_IDS AS id, $V1_COUNTS AS c) ANY INNER JOIN (SELECT run, id, stack_hash FROM src.stack_ids) USING (run, id)"
okif $? "a store of schema 1 made of the same windows"
OLD=clickhouse://127.0.0.1:$CH_HTTP_one/old
is "$(run_err "$FLAME" show --store "$OLD" "${OLDRANGE[@]}")" 7 "a reader does not migrate a version 1 store either"
like "$(cat err.txt)" "a store of version 1, this docker-flame reads version 4: a recorder upgrades it" "saying what does"
is "$(ch_sql one "SELECT count() FROM system.tables WHERE database = 'old' AND name = 'windows'")" 0 "nothing made by the reader"
"$FLAME" prune --retain 0 --no-compact --store "$OLD" 2>old1.log
okif $? "prune --retain 0 --no-compact migrates it (to 2, then 3, then 4)"
"$FLAME" show --store "$OLD" "${OLDRANGE[@]}" --format folded -o old1.folded 2>>old1.log
okif $? "show from the migrated version 1 store"
same old.folded old1.folded "it reads as the old code read it"
is "$(ch_sql one "SELECT max(toInt64(value)) FROM old.meta WHERE key = 'schema_version'")" 4 "the store says version 4 now"
is "$(ch_sql one "SELECT count() FROM old.samples_v1") $(ch_sql one "SELECT count() FROM old.windows")" \
    "$(ch_sql one "SELECT count() FROM old.samples_v1") 73" "a row per window; the old table kept as samples_v1"

# ---- profile types (schema 4): wall windows beside cpu; a store of schema 3 read as all cpu ----
wall_gen() { # STORE: 30 windows of web's wall clock
    "$GEN" --store "$1" --container web --type wall --workload fixture --samples 990 --seed 5 \
        --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" --start "$T0" \
        --windows 30 >/dev/null
}
wall_gen "$ONE" && wall_gen "$TMP/ref.db"
okif $? "30 wall windows of web into the server and into SQLite"
"$FLAME" show web api --store "$ONE" --since "$since" --until "$until" --format folded -o types-cpu.folded 2>/dev/null
same ref.folded types-cpu.folded "show (cpu by default): the wall windows are left out"
for st in "$ONE" "$TMP/ref.db"; do
    "$FLAME" show web --mode wall --store "$st" --since "$since" --until "$until" --format folded \
        -o "wall-$(echo "$st" | md5sum | cut -c1-6).folded" 2>>wall.log || echo "show --mode wall failed" >>wall.log
done
like "$(cat wall.log)" "\(30 windows, wall clock: [0-9,]+ ns," "show --mode wall: the 30 wall windows, in ns"
same "wall-$(echo "$TMP/ref.db" | md5sum | cut -c1-6).folded" "wall-$(echo "$ONE" | md5sum | cut -c1-6).folded" \
    "show --mode wall: the same as SQLite's"
like "$("$FLAME" ls web --store "$ONE")" "web .* wall .* 30 " "ls: web's wall windows, a line of their own"
"$FLAME" prune --store "$ONE" >/dev/null 2>&1
"$FLAME" show web --mode wall --store "$ONE" --since "$since" --until "$until" --format folded -o wall-pruned.folded 2>/dev/null
same "wall-$(echo "$ONE" | md5sum | cut -c1-6).folded" wall-pruned.folded "compaction merges wall windows apart from cpu's"
"$FLAME" show web api --store "$ONE" --since "$since" --until "$until" --format folded -o types-cpu2.folded 2>/dev/null
same ref.folded types-cpu2.folded "and cpu's apart from wall's"
V3=clickhouse://127.0.0.1:$CH_HTTP_one/v3
"$GEN" --store "$V3" --container web --workload fixture --samples 990 --seed 6 \
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" --start "$T0" --windows 30 >/dev/null &&
    "$FLAME" show web --store "$V3" --since "$since" --until "$until" --format folded -o v3-before.folded 2>/dev/null &&
    ch_sql one "ALTER TABLE v3.windows DROP COLUMN type" && ch_sql one "DROP TABLE v3.meta" &&
    ch_sql one "CREATE TABLE v3.meta (key String, value String) ENGINE = TinyLog" &&
    ch_sql one "INSERT INTO v3.meta VALUES ('schema_version', '3')"
okif $? "a store of schema 3 (windows without a type)"
"$FLAME" show web --store "$V3" --since "$since" --until "$until" --format folded -o v3.folded 2>v3.log
okif $? "a reader reads it as it is ($(cat v3.log))"
same v3-before.folded v3.folded "its windows are cpu"
is "$(run_err "$FLAME" show web --mode wall --store "$V3" --since "$since" --until "$until")" 8 "none are wall: exit 8"
like "$("$FLAME" ls --store "$V3")" "web .* cpu .* 30 " "ls: cpu"
is "$(ch_sql one "SELECT max(toInt64(value)) FROM v3.meta WHERE key = 'schema_version'") $(ch_sql one "SELECT count() FROM system.columns WHERE database = 'v3' AND table = 'windows' AND name = 'type'")" \
    "3 0" "nothing changed by the readers"
"$FLAME" prune --retain 0 --no-compact --store "$V3" >/dev/null 2>&1
okif $? "a writer opens it"
is "$(ch_sql one "SELECT max(toInt64(value)) FROM v3.meta WHERE key = 'schema_version'") $(ch_sql one "SELECT count() FROM v3.windows WHERE type = 'cpu'")" \
    "4 30" "version 4 now, its 30 windows cpu"

# ---- two shards behind a Distributed table ----
for s in s1 s2; do
    eval "CH_HTTP_$s=$(free_port) CH_TCP_$s=$(free_port)"
done
cluster="<two><shard><replica><host>127.0.0.1</host><port>$CH_TCP_s1</port></replica></shard><shard><replica><host>127.0.0.1</host><port>$CH_TCP_s2</port></replica></shard></two>"
ch_start s1 "$cluster" && ch_start s2 "$cluster" || bail "the shards did not start"
# each shard: the store's own tables in database flame_local (made by a writer: prune that
# deletes nothing); the front (s1, database flame): meta, stacks and stack_ids of its own,
# windows a Distributed table over the shards
is "$(run_err "$FLAME" ls --store "clickhouse://127.0.0.1:$CH_HTTP_s1/flame_local")" 8 \
    "ls of a database without a store: exit 8"
like "$(cat err.txt)" "no store in that database \(docker flame record makes it\)" "said so"
is "$(ch_sql s1 "SELECT count() FROM system.databases WHERE name = 'flame_local'")" 0 "and the reader made nothing"
"$FLAME" prune --retain 0 --no-compact --store "clickhouse://127.0.0.1:$CH_HTTP_s1/flame_local" >/dev/null 2>&1 &&
    "$FLAME" prune --retain 0 --no-compact --store "clickhouse://127.0.0.1:$CH_HTTP_s2/flame_local" >/dev/null 2>&1 &&
    "$FLAME" prune --retain 0 --no-compact --store "clickhouse://127.0.0.1:$CH_HTTP_s1/flame" >/dev/null 2>&1 &&
    ch_sql s1 "DROP TABLE flame.windows" &&
    ch_sql s1 "CREATE TABLE flame.windows AS flame_local.windows ENGINE = Distributed(two, flame_local, windows, sipHash64(start_ms))"
okif $? "two shards and a Distributed windows table"
TWO=clickhouse://127.0.0.1:$CH_HTTP_s1/flame
gen "$TWO"
okif $? "the same windows through the Distributed table"
n1=$(ch_sql s1 "SELECT count() FROM flame_local.windows")
n2=$(ch_sql s2 "SELECT count() FROM flame_local.windows")
check "rows on both shards ($n1, $n2)" test "${n1:-0}" -gt 0 -a "${n2:-0}" -gt 0
outputs "$TWO" two
okif $? "show from the two shards"
as_sqlite two "two shards"
out=$("$FLAME" ls --store "$TWO")
like "$out" "sizes: see each shard's database" "ls over shards says where the sizes are"
is "$(run_err "$FLAME" prune --store "$TWO")" 7 "prune through a Distributed table: exit 7"
like "$(cat err.txt)" "prune each shard's own tables" "saying what to do instead"

# ---- a server that stops: the spool ----
# spool_max counts the data (pairs and the dictionary of stacks): the fixture's 65 stacks are
# 1 KB, a window 70 bytes; 12K holds the 30 windows of a short outage, not the 400 of a long one
SP="$ONE?spool=$TMP/spool.db&spool_max=12K"
late() { # START WINDOWS SEED: fixture windows of container late through the spooling URL
    "$GEN" --store "$SP" --container late --workload fixture --samples 990 --seed "$3" \
        --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
        --start "$1" --windows "$2" 2>&1
}
late_windows() { "$FLAME" ls late --store "$ONE" | awk '$1 == "late" { print $(NF - 3) }'; }
ch_stop one
out=$(late "$T1" 30 3)
okif $? "windows written while the server is stopped"
like "$out" "30 windows \(30 spooled\)" "all of them spooled"
check "the spool file is there" test -s spool.db
# windows of container "twice" in a spool of their own (spool_max left at its default), and a
# copy of it: the same windows, with the same uids, to be sent a second time
"$GEN" --store "$ONE?spool=$TMP/twice.db" --container twice --workload fixture --samples 990 --seed 8 \
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" --start "$T1" --windows 20 >/dev/null 2>&1
cp twice.db twice-again.db
is "$(run_err "$FLAME" show late --store "$SP" --since 1h)" 7 "show while it is down: exit 7"
check "one line" one_line
like "$(cat err.txt)" "cannot reach the server" "said so"
ch_start one || bail "clickhouse-server one did not restart"
late $((T1 + 3600000)) 1 4 >/dev/null
okif $? "the next window once the server is back"
is "$(late_windows)" 31 "every window reached the server: the 30 spooled and the new one"
unlike "$("$FLAME" ls --store "$SP")" "wait in the local spool" "nothing waits in the spool"
# A window sent twice (an answer lost after the server stored it, two drains of one spool): the
# spool and its copy send the same 20 windows, each with the uid it was given when first put.
for f in twice.db twice-again.db; do
    "$GEN" --store "$ONE?spool=$TMP/$f" --windows 0 >/dev/null 2>&1
done
is "$(ch_sql one "SELECT count() FROM flame.windows WHERE container_name = 'twice'")" 40 "the server holds the 20 windows twice"
is "$("$FLAME" ls twice --store "$ONE" | awk '$1 == "twice" { print $(NF - 3) }')" 20 "ls counts each window once"
tw=(--since "$(date -d "@$((T1 / 1000))" +%Y-%m-%dT%H:%M:%S%:z)" --until "$(date -d "@$((T1 / 1000 + 200))" +%Y-%m-%dT%H:%M:%S%:z)")
"$FLAME" show twice --store "$ONE" "${tw[@]}" --format folded -o twice.folded 2>twice.txt
like "$(cat twice.txt)" "wrote twice.folded \(20 windows," "show counts each window once"
"$GEN" --store "$TMP/twice-ref.db" --container twice --workload fixture --samples 990 --seed 8 \
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" --start "$T1" --windows 20 >/dev/null 2>&1
"$FLAME" show twice --store "$TMP/twice-ref.db" "${tw[@]}" --format folded -o twice-ref.folded 2>/dev/null
same twice-ref.folded twice.folded "the same stacks and counts as the 20 windows stored once"
"$FLAME" show twice --store "$ONE" "${tw[@]}" --timeline -o twice.svg 2>/dev/null
is "$(grep -c '<rect class="b"' twice.svg)" 20 "the timeline too: 20 bars"

# a longer outage than the spool holds: the oldest windows go, the file stays bounded
ch_stop one
late $((T1 + 2 * 3600000)) 400 5 >out.txt
like "$(cat out.txt)" "400 windows \(400 spooled\)" "400 windows spooled"
waiting=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM windows").fetchone()[0])' spool.db)
check "the spool is bounded: $waiting of the 400 windows wait" test "${waiting:-0}" -gt 100 -a "${waiting:-0}" -lt 400
size=$(stat -c %s spool.db)
check "the spool file stays small ($size bytes)" test "$size" -lt 1000000
ch_start one || bail "clickhouse-server one did not restart"
late $((T1 + 4 * 3600000)) 1 6 >/dev/null
n=$(late_windows)
is "${n:-0}" $((31 + waiting + 1)) "the kept windows and the new one reached the server"
unlike "$("$FLAME" ls --store "$SP")" "wait in the local spool" "nothing waits in the spool"
"$FLAME" show late --store "$ONE" --since "$(date -d "@$((T1 / 1000 + 2 * 3600 + 3900))" +%Y-%m-%dT%H:%M:%S%:z)" \
    --until "$(date -d "@$((T1 / 1000 + 2 * 3600 + 4000))" +%Y-%m-%dT%H:%M:%S%:z)" -o late.svg 2>late.txt
okif $? "the last windows of the outage show"
like "$(cat late.txt)" "wrote late.svg \(1[01] windows" "all ten of them"

# ---- two processes send one spool at once: each window reaches the server once ----
# (two recorders of one server share its spool; `docker flame stop --all` flushes them together)
SP2="$ONE?spool=$TMP/spool2.db"
ch_stop one
writers=()
for seed in 7 8; do
    "$GEN" --store "$SP2" --container dup --id "dup-$seed" --stacks 50 --samples 200 --seed "$seed" \
        --start $((T1 + (seed - 1) * 3600000)) --windows 150 --batch 1 >"dup-$seed.txt" 2>&1 &
    writers+=($!)
done
# each writer on its own: a writer that failed says why (CI once saw 150 of the 300 rows)
for i in 0 1; do
    wait "${writers[$i]}"
    okif $? "writer $((i + 7)) into the shared spool: exit 0 ($(tail -2 "dup-$((i + 7)).txt" | tr '\n' ' '))"
done
is "$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM windows").fetchone()[0])' spool2.db)" \
    300 "two writers spooled 150 windows each while the server was down"
[ "$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT count(*) FROM windows").fetchone()[0])' spool2.db)" = 300 ] ||
    fdiag "spool2.db per container: $(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT s.container_id, count(*) FROM windows w JOIN sources s ON s.id = w.source GROUP BY 1").fetchall())' spool2.db 2>&1); writers: $(cat dup-7.txt dup-8.txt | tr '\n' ' ')"
ch_start one || bail "clickhouse-server one did not restart"
"$GEN" --store "$SP2" --windows 0 --stacks 10 >flush1.txt 2>&1 &
f1=$!
"$GEN" --store "$SP2" --windows 0 --stacks 10 >flush2.txt 2>&1 &
f2=$!
wait "$f1" "$f2"
is "$(ch_sql one "SELECT count() FROM flame.windows WHERE container_name = 'dup'")" 300 \
    "two processes flushing the spool at once: 300 windows, 300 rows"
is "$(ch_sql one "SELECT count() FROM (SELECT container_id, start_ms FROM flame.windows WHERE container_name = 'dup' GROUP BY container_id, start_ms HAVING count() > 1)")" 0 \
    "no window twice"
unlike "$("$FLAME" ls --store "$SP2")" "wait in the local spool" "nothing waits in the spool"

# ---- compaction while windows arrive in the day it rebuilds (a spool drained late) ----
# The day is rebuilt into a scratch table and swapped in whole: a window that lands meanwhile
# must not be dropped by the swap. Every sample written is there afterwards, merged or not.
RACE=clickhouse://127.0.0.1:$CH_HTTP_one/race
DAY0=$(( ($(date +%s) / 86400 - 2) * 86400 * 1000 + 3600 * 1000 ))
"$GEN" --store "$RACE" --container bulk --stacks 2000 --samples 500 --seed 11 --start "$DAY0" \
    --windows 2000 --batch 100 >/dev/null
okif $? "a day two days ago: 2,000 windows"
sum_of() { ch_sql one "SELECT sum(samples) FROM race.windows WHERE container_name = '$1'"; }
bulk0=$(sum_of bulk)
# the writer: batches of 50 windows into that day, one window a put, until told to stop
late_args=(--container late2 --workload fixture --samples 990 --batch 1 --windows 50
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt")
late_batch() { # STORE K
    "$GEN" --store "$1" "${late_args[@]}" --seed $((100 + $2)) \
        --start $((DAY0 + 8 * 3600 * 1000 + ($2 % 100) * 500 * 1000)) >/dev/null 2>&1
}
(k=0; while [ ! -e stop-writer ]; do late_batch "$RACE" "$k" || exit 1; k=$((k + 1)); done; echo "$k" >writer-k) &
writer=$!
wait_until 60 test "$(ch_sql one "SELECT count() FROM race.windows WHERE container_name = 'late2'")" -gt 0
"$FLAME" prune --store "$RACE" >race.txt 2>&1 && "$FLAME" prune --store "$RACE" >>race.txt 2>&1
okif $? "two prunes while late windows arrive in that day"
check "the writer wrote all along" kill -0 "$writer"
touch stop-writer
wait "$writer"
okif $? "the writer's puts all succeeded"
diag "$(sed 's/([^)]*)//' race.txt)"
k=$(cat writer-k)
for ((j = 0; j < k; j++)); do late_batch "$TMP/late2.db" "$j"; done
want=$(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT sum(samples) FROM windows").fetchone()[0])' late2.db)
is "$(sum_of late2)" "$want" "every late window's samples are in the store"
is "$(sum_of bulk)" "$bulk0" "and the day's own"
out=$("$FLAME" prune --store "$RACE" 2>&1)
like "$out" "merged [0-9,]+ windows into [0-9,]+ buckets" "a later prune merges the day ($out)"
unlike "$out" "not merged" "this time"
is "$(sum_of late2) $(sum_of bulk)" "$want $bulk0" "with the same samples"
is "$(ch_sql one "SELECT count() FROM system.tables WHERE database = 'race' AND name LIKE 'samples_compact_%'")" 0 \
    "no scratch table left"

# ---- bad stores: one line, the documented exit code ----
P=$(free_port)
is "$(run_err "$FLAME" show web --store "clickhouse://127.0.0.1:$P/flame" --since 1h)" 7 "a refused connection: exit 7"
check "one line" one_line
like "$(cat err.txt)" "clickhouse://127.0.0.1:$P/flame: cannot reach the server" "said so"
is "$(run_err "$FLAME" show web --store "clickhouse://nobody:wrong@127.0.0.1:$CH_HTTP_one/flame" --since 1h)" 7 \
    "a server that refuses us: exit 7"
check "one line" one_line
like "$(cat err.txt)" "clickhouse://127.0.0.1:$CH_HTTP_one/flame: the server answered 401: .*Unknown user nobody" "with the server's answer"
unlike "$(cat err.txt)" "wrong" "the password is not printed"
is "$(run_err "$FLAME" show web --store "redis://127.0.0.1/0")" 2 "an unknown URL: exit 2"
check "one line" one_line
is "$(run_err "$FLAME" show web --store "clickhouse://127.0.0.1:$CH_HTTP_one/no-such;db")" 2 "a malformed database name: exit 2"
ch_sql one "INSERT INTO flame.meta VALUES ('schema_version', '9')" >/dev/null
is "$(run_err "$FLAME" ls --store "$ONE")" 7 "a store of a newer version: exit 7"
check "one line" one_line
like "$(cat err.txt)" "written by a newer docker-flame \(store version 9" "said so"
is "$(run_err "$FLAME" show web --store "$TWO" --since "$until" --until 1m)" 8 "an empty range: exit 8"
check "one line" one_line
like "$(cat err.txt)" "nothing stored for web from .*; the store has it from" "saying what is stored"
done_testing
