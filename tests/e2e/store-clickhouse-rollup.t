#!/usr/bin/env bash
# Hour rollups of a ClickHouse store (docs/STORE.md, "Hour rollups" under ClickHouse), on a real
# clickhouse-server (Debian's, its own config and data under $TMP; no Docker engine needed):
# built by compaction for ended hours, a range over rolled hours gives the same bytes of
# `show --format folded` as the windows alone (ranges cutting hours, one container, one JVM, the
# wall type beside cpu, after the day's rebuild into buckets); a rollup is read (a doctored one
# shows) only while its fingerprint matches its windows: a window added to its hour or deleted
# from it makes the reader take the windows; a store made before the table (an older
# docker-flame's) is read from its windows, untouched by a reader, and a writer adds the table
# without losing a window.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/clickhouse-lib.sh"
ch_test_setup
ch_start one || bail "clickhouse-server one did not start"
DB=clickhouse://127.0.0.1:$CH_HTTP_one/r

# Three ended hours from a whole hour four hours ago (compaction rolls up ended hours, and
# rebuilds a day whose last window is an hour old); web and api (two JVMs of api: a restart),
# web's wall windows in the same hours.
T0=$(( ($(date +%s) / 3600 - 4) * 3600 * 1000 ))
H=3600000
H1=$((T0 / H + 1)) H2=$((T0 / H + 2)) # the two whole hours of the first range
iso() { date -u -d "@$(($1 / 1000))" +%Y-%m-%dT%H:%M:%SZ; }
gen() { # STORE
    "$GEN" --store "$1" --container web --workload fixture --samples 990 --seed 1 \
        --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
        --start "$T0" --windows 1080 --empty-every 50 --batch 360 >/dev/null &&
        "$GEN" --store "$1" --container api --pid 7 --stacks 2000 --samples 500 --seed 2 \
            --start $((T0 + 1234567)) --windows 500 --batch 250 >/dev/null &&
        "$GEN" --store "$1" --container api --pid 8 --stacks 2000 --samples 500 --seed 3 \
            --start $((T0 + 1234567 + 5000 * 1000)) --windows 400 --batch 200 >/dev/null &&
        "$GEN" --store "$1" --container web --type wall --workload fixture --samples 990 --seed 5 \
            --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
            --start $((T0 + 600000)) --windows 600 --batch 300 >/dev/null
}
# the ranges: cutting both ends, exactly two hours, one container, one JVM, wall
# (minute bounds: after the rebuild into 1-minute buckets, a range reads the same windows)
RANGES=("--since $(iso $((T0 + 600000))) --until $(iso $((T0 + 3 * H - 60000)))"
    "--since $(iso $((H1 * H))) --until $(iso $(((H2 + 1) * H)))"
    "web --since $(iso $((T0 + 1200000))) --until $(iso $((T0 + 3 * H)))"
    "api --pid 7 --since $(iso "$T0") --until $(iso $((T0 + 3 * H)))"
    "web --mode wall --since $(iso "$T0") --until $(iso $((T0 + 3 * H)))")
differs() { if cmp -s "$1" "$2"; then nok "$3"; else ok "$3"; fi; }
rolled() { ch_sql one "SELECT count() FROM (SELECT 1 FROM r.rollups FINAL)"; }
# The windows alone: the same store read while its rollups table is detached (a store without it
# is read from its windows)
bare() { # PREFIX
    ch_sql one "DETACH TABLE r.rollups" && ch_outputs "$DB" "$1"
    local rc=$?
    ch_sql one "ATTACH TABLE r.rollups" || rc=1
    return $rc
}

gen "$DB"
okif $? "3 h of web (cpu, wall) and api (two JVMs) into ClickHouse"
is "$(ch_sql one "SELECT count() FROM system.tables WHERE database = 'r' AND name = 'rollups'") $(rolled)" \
    "1 0" "a new store has its rollups table, empty"
ch_outputs "$DB" ref
okif $? "show of 5 ranges from the windows"

# ---- rollups built by compaction (no buckets: the policy of store-gen --rollup) ----
out=$("$GEN" --store "$DB" --container x --windows 0 --rollup)
# web's 3 h (cpu), web's wall: 10 min to 1 h 50 min, 2 h; api 7: 20:34 .. 1:44 (2 hours), api 8:
# 1:43 .. 2:50 (2 hours): 3 + 2 + 2 + 2
like "$out" "store-gen: 9 hour rollups built" "compaction rolls up each JVM's, type's and run's ended hours: 9 ($out)"
is "$(rolled)" 9 "9 rows in rollups"
ch_outputs "$DB" roll
okif $? "show of the 5 ranges with rollups"
ch_same_all ref roll "with rollups: the same folded bytes for every range (cutting hours, whole hours, one container, one JVM, wall)"
out=$("$GEN" --store "$DB" --container x --windows 0 --rollup)
like "$out" "store-gen: 0 hour rollups built" "a second compaction finds nothing to roll up"

# ---- a rollup is read only while its fingerprint matches its windows ----
ROLLUP_COLS="host, container_id, container_name, image, jvm_pid, jvm_version, type, run, hour, start_ms, end_ms, samples, nw, fp, ids, ids_hi, counts"
doctor() { # HOUR: web's cpu rollup of HOUR replaced by one whose every count is 256 higher
    ch_sql one "INSERT INTO r.rollups SELECT $ROLLUP_COLS, arrayMap(x -> x + 1, counts_hi), at + 1 FROM r.rollups FINAL WHERE container_name = 'web' AND type = 'cpu' AND hour = $1" &&
        ch_sql one "OPTIMIZE TABLE r.rollups FINAL"
}
doctor "$H1"
okif $? "web's rollup of the first whole hour doctored (each count + 256)"
ch_outputs "$DB" doc
okif $? "show with the doctored rollup"
want=$(($(ch_sum_of ref.0.folded) + 256 * $(ch_sql one "SELECT length(ids) FROM r.rollups FINAL WHERE container_name = 'web' AND type = 'cpu' AND hour = $H1")))
is "$(ch_sum_of doc.0.folded)" "$want" "the doctored rollup is what the reader adds for its hour: it reads rollups"
is "$(ch_sum_of doc.4.folded)" "$(ch_sum_of ref.4.folded)" "and not for another type (wall)"
# a window of the same run added into that hour (a spool drained late): the rollup is stale
ch_sql one "INSERT INTO r.windows SELECT host, container_id, container_name, image, jvm_pid, jvm_version, start_ms + 1, end_ms + 1, frequency, samples, level, run, ids, ids_hi, counts, counts_hi, uid + 1, type FROM r.windows WHERE container_name = 'web' AND type = 'cpu' AND intDiv(start_ms, 3600000) = $H1 AND samples > 0 LIMIT 1"
okif $? "a late window of web's run into that hour"
ch_outputs "$DB" late
bare late-bare
okif $? "show with the stale rollup, and with the windows alone"
ch_same_all late-bare late "a stale rollup (a window added after it) is not used: the same bytes as the windows alone"
differs ref.0.folded late.0.folded "and the late window counts"
out=$("$GEN" --store "$DB" --container x --windows 0 --rollup)
like "$out" "store-gen: 1 hour rollups built" "the next compaction rolls that hour up again ($out)"
ch_outputs "$DB" late2
ch_same_all late-bare late2 "with the new rollup: the same bytes"
# a window deleted from the other whole hour, whose rollup is doctored
doctor "$H2"
uid=$(ch_sql one "SELECT uid FROM r.windows WHERE container_name = 'web' AND type = 'cpu' AND intDiv(start_ms, 3600000) = $H2 AND samples > 0 ORDER BY start_ms LIMIT 1")
ch_sql one "ALTER TABLE r.windows DELETE WHERE uid = $uid"
mutated() { [ "$(ch_sql one "SELECT count() FROM system.mutations WHERE database = 'r' AND table = 'windows' AND NOT is_done")" = 0 ]; }
wait_until 60 mutated
okif $? "a window of web deleted from the second whole hour (its rollup doctored)"
ch_outputs "$DB" del
bare del-bare
ch_same_all del-bare del "a stale rollup (a window deleted after it) is not used: the same bytes as the windows alone"
differs late2.0.folded del.0.folded "and the deleted window is gone"

# ---- the day's rebuild into buckets (prune): rollups of the buckets, the same sums ----
out=$("$FLAME" prune --store "$DB" 2>&1)
like "$out" "merged [0-9,]+ windows into [0-9,]+ buckets" "prune merges the windows into 1-minute buckets ($out)"
ch_outputs "$DB" pruned
bare pruned-bare
ch_same_all pruned-bare pruned "after the rebuild: the rollups of the buckets give the bytes of the buckets"
is "$(ch_sql one "SELECT count() FROM r.rollups FINAL WHERE at > 0")" 9 "one rollup per JVM, type, run and ended hour"

# ---- a store of an older docker-flame: no rollups table ----
ch_sql one "CREATE DATABASE o" && ch_sql one "CREATE TABLE o.meta AS r.meta" && ch_sql one "INSERT INTO o.meta SELECT * FROM r.meta" &&
    ch_sql one "CREATE TABLE o.dict AS r.dict" && ch_sql one "INSERT INTO o.dict SELECT * FROM r.dict" &&
    ch_sql one "CREATE TABLE o.windows AS r.windows" && ch_sql one "INSERT INTO o.windows SELECT * FROM r.windows"
okif $? "a store without the rollups table, as an older docker-flame made it (the same windows)"
OLD=clickhouse://127.0.0.1:$CH_HTTP_one/o
nwin=$(ch_sql one "SELECT count() FROM o.windows")
has_rollups() { ch_sql one "SELECT count() FROM system.tables WHERE database = 'o' AND name = 'rollups'"; }
ch_outputs "$OLD" old
okif $? "a reader reads it"
ch_same_all pruned old "from its windows: the same bytes"
is "$(has_rollups)" 0 "the reader made no table"
"$FLAME" prune --retain 0 --no-compact --store "$OLD" 2>old.log
okif $? "a writer opens it (prune --retain 0 --no-compact: no retention, no buckets)"
is "$(has_rollups) $(ch_sql one "SELECT count() FROM o.windows") $(ch_sql one "SELECT count() FROM o.rollups FINAL")" \
    "1 $nwin 9" "the writer made the table and rolled up the 9 ended hours, every window kept"
ch_outputs "$OLD" oldroll
ch_same_all pruned oldroll "read with its rollups: the same bytes"
done_testing
