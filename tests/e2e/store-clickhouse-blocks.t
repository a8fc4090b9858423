#!/usr/bin/env bash
# 6-hour rollups of a ClickHouse store (docs/STORE.md, "6-hour rollups"), on a real
# clickhouse-server (Debian's, its own config and data under $TMP; no Docker engine needed):
# compaction sums an ended 6-hour block's hour rollups into one row per JVM, type and run; a
# range over the whole block gives the same bytes of `show --format folded` as the windows alone
# (the block exactly, with edges, one container, one JVM of two, the wall type, whole hours
# only); a block rollup is read (a doctored one shows) only while its fingerprint matches the
# block's windows, and then the block's hour rollups are not read; a late window makes the
# reader take the hour rollups and windows again, and the next compaction sums the block anew;
# a store without the table (an older docker-flame's) is read from its hour rollups, untouched
# by a reader, and a writer adds the table.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse-lib.sh"
ch_test_setup
ch_start one || bail "clickhouse-server one did not start"
DB=clickhouse://127.0.0.1:$CH_HTTP_one/b

# The last ended block [B, B + 6 h) (UTC 00, 06, 12 or 18 h), 1-minute windows from an hour
# before it to an hour after it: web (cpu and wall) and api (a JVM restart in the block's
# middle: pids 7 and 8).
H=3600000
B=$(( ($(date +%s) / 21600 - 1) * 21600 * 1000 ))
BH=$((B / H))
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }
gen() { # STORE
    "$GEN" --store "$1" --container web --workload fixture --samples 500 --seed 1 \
        --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
        --start $((B - H)) --window-ms 60000 --windows 480 --empty-every 50 --batch 240 >/dev/null &&
        "$GEN" --store "$1" --container api --pid 7 --stacks 2000 --samples 300 --seed 2 \
            --start $((B - 1234567)) --window-ms 60000 --windows 200 --batch 200 >/dev/null &&
        "$GEN" --store "$1" --container api --pid 8 --stacks 2000 --samples 300 --seed 3 \
            --start $((B + 3 * H + 60000)) --window-ms 60000 --windows 240 --batch 240 >/dev/null &&
        "$GEN" --store "$1" --container web --type wall --workload fixture --samples 500 --seed 5 \
            --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
            --start $((B + 600000)) --window-ms 60000 --windows 400 --batch 200 >/dev/null
}
# the ranges: the block exactly, with edges, one container, one JVM, wall, whole hours only
RANGES=("--since $(iso "$B") --until $(iso $((B + 6 * H)))"
    "--since $(iso $((B - 1800000))) --until $(iso $((B + 6 * H + 1200000)))"
    "web --since $(iso "$B") --until $(iso $((B + 6 * H)))"
    "api --pid 7 --since $(iso $((B - H))) --until $(iso $((B + 6 * H)))"
    "web --mode wall --since $(iso "$B") --until $(iso $((B + 7 * H)))"
    "--since $(iso $((B + H))) --until $(iso $((B + 6 * H)))")
blocks() { ch_sql one "SELECT count() FROM (SELECT 1 FROM b.rollups_6h FINAL)"; }
# The windows alone: both rollups tables detached (a store without them is read from its windows)
bare() { # PREFIX
    ch_sql one "DETACH TABLE b.rollups" && ch_sql one "DETACH TABLE b.rollups_6h" && ch_outputs "$DB" "$1"
    local rc=$?
    ch_sql one "ATTACH TABLE b.rollups" && ch_sql one "ATTACH TABLE b.rollups_6h" || rc=1
    return $rc
}
compact() { "$GEN" --store "$DB" --container x --windows 0 --rollup; }

gen "$DB"
okif $? "8 h of web (cpu, wall) and api (two JVMs) into ClickHouse around the block from $(iso "$B")"
is "$(ch_sql one "SELECT count() FROM system.tables WHERE database = 'b' AND name = 'rollups_6h'") $(blocks)" \
    "1 0" "a new store has its rollups_6h table, empty"
ch_outputs "$DB" ref
okif $? "show of ${#RANGES[@]} ranges from the windows"

# ---- built by compaction from the block's hour rollups ----
out=$(compact)
# the block of each JVM, type and run (4), and the block before it of web's cpu and api 7 (their
# windows' last hour): a block is summed wherever hour rollups hold all of its windows
like "$out" "\(6 6-hour rollups\)" "compaction sums the ended blocks of each JVM, type and run: 6 ($out)"
is "$(blocks) $(ch_sql one "SELECT count() FROM b.rollups_6h FINAL WHERE hour = $BH") $(ch_sql one "SELECT count() FROM b.rollups_6h FINAL WHERE hour = $((BH - 6))")" \
    "6 4 2" "6 rows in rollups_6h: 4 of the block, keyed by its first hour, 2 of the block before"
ch_outputs "$DB" roll
okif $? "show with the 6-hour rollups"
ch_same_all ref roll "with 6-hour rollups: the same folded bytes for every range"
like "$(compact)" "\(0 6-hour rollups\)" "a second compaction finds no block to sum"

# ---- read while its fingerprint holds; then the block's hours are not read ----
COLS="host, container_id, container_name, image, jvm_pid, jvm_version, type, run, hour, start_ms, end_ms, samples, nw, fp, ids, ids_hi, counts"
doctor() { # TABLE HOUR: web's cpu rollup of HOUR, each count 256 higher
    ch_sql one "INSERT INTO b.$1 SELECT $COLS, arrayMap(x -> x + 1, counts_hi), at + 1 FROM b.$1 FINAL WHERE container_name = 'web' AND type = 'cpu' AND hour = $2" &&
        ch_sql one "OPTIMIZE TABLE b.$1 FINAL"
}
npairs() { ch_sql one "SELECT length(ids) FROM b.$1 FINAL WHERE container_name = 'web' AND type = 'cpu' AND hour = $2"; }
doctor rollups_6h "$BH"
okif $? "web's block rollup doctored (each count + 256)"
ch_outputs "$DB" doc
is "$(ch_sum_of doc.0.folded)" "$(($(ch_sum_of ref.0.folded) + 256 * $(npairs rollups_6h "$BH")))" \
    "the doctored block rollup is what the reader adds for the block: it reads it"
is "$(ch_sum_of doc.5.folded) $(ch_sum_of doc.4.folded)" "$(ch_sum_of ref.5.folded) $(ch_sum_of ref.4.folded)" \
    "not for a range of the block's hours only, nor for another type"
ch_sql one "CREATE TABLE b.keep AS b.rollups" &&
    ch_sql one "INSERT INTO b.keep SELECT * FROM b.rollups FINAL WHERE container_name = 'web' AND type = 'cpu' AND hour = $((BH + 2))" &&
    doctor rollups $((BH + 2))
okif $? "and web's hour rollup of the block's third hour doctored too (the original kept)"
ch_outputs "$DB" doc2
is "$(ch_sum_of doc2.0.folded)" "$(ch_sum_of doc.0.folded)" "the block's hour rollups are not read where the block rollup is"
is "$(ch_sum_of doc2.5.folded)" "$(($(ch_sum_of ref.5.folded) + 256 * $(npairs rollups $((BH + 2)))))" \
    "but are for the hours-only range"
ch_sql one "INSERT INTO b.rollups SELECT $COLS, counts_hi, at + 2 FROM b.keep" &&
    ch_sql one "OPTIMIZE TABLE b.rollups FINAL" && ch_sql one "DROP TABLE b.keep"
okif $? "the hour rollup as compaction made it again"

# ---- a late window: the block rollup (and its hour's) stale ----
ch_sql one "INSERT INTO b.windows SELECT host, container_id, container_name, image, jvm_pid, jvm_version, start_ms + 1, end_ms + 1, frequency, samples, level, run, ids, ids_hi, counts, counts_hi, uid + 1, type FROM b.windows WHERE container_name = 'web' AND type = 'cpu' AND intDiv(start_ms, 3600000) = $((BH + 4)) AND samples > 0 LIMIT 1"
okif $? "a late window of web's run into the block's fifth hour"
ch_outputs "$DB" late
bare late-bare
okif $? "show with the stale rollups, and with the windows alone"
ch_same_all late-bare late "stale block and hour rollups are not used: the same bytes as the windows alone"
out=$(compact)
like "$out" "store-gen: 1 hour rollups built.*\(1 6-hour rollups\)" "the next compaction rolls up that hour and sums the block anew ($out)"
ch_outputs "$DB" late2
bare late2-bare
ch_same_all late2-bare late2 "with the new rollups: the same bytes as the windows alone"

# ---- a store of an older docker-flame: hour rollups, no rollups_6h ----
ch_sql one "DROP TABLE b.rollups_6h"
okif $? "the rollups_6h table dropped (a store of the docker-flame before it)"
ch_outputs "$DB" old
ch_same_all late2 old "a reader reads it from its hour rollups: the same bytes"
has6() { ch_sql one "SELECT count() FROM system.tables WHERE database = 'b' AND name = 'rollups_6h'"; }
is "$(has6)" 0 "the reader made no table"
"$FLAME" prune --retain 0 --no-compact --store "$DB" 2>old.log
okif $? "a writer opens it (prune --retain 0 --no-compact)"
is "$(has6) $(blocks)" "1 6" "the writer made the table and summed the ended blocks"
ch_outputs "$DB" oldroll
ch_same_all late2 oldroll "read with its 6-hour rollups: the same bytes"
done_testing
