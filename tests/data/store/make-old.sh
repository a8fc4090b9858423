#!/usr/bin/env bash
# How the stores of the previous schemas in this directory were made: by docker-flame 8525bde
# (store schema: SQLite 1, ClickHouse 2), whose build/store-gen and build/docker-flame are given
# as OLD=DIR. The migration tests open them with today's code and compare what `show` reads with
# what the old code read (old.folded.gz: every container from 08:00 to 10:00 UTC, the same from
# both stores; old-web.folded.gz: web alone; written here by the old binary).
#   tests/data/store/make-old.sh OLD_BUILD_DIR [CLICKHOUSE_HTTP_PORT]
# With a port, also the ClickHouse store (database flame_old on that server, dumped as TSV).
set -euo pipefail
OLD=${1:?usage: make-old.sh OLD_BUILD_DIR [CLICKHOUSE_HTTP_PORT]}
here=$(cd "$(dirname "$0")" && pwd)
fixture=$here/../fold/jdk17-container-work.improved.txt
T=1795597200000      # 2026-11-25 09:00:00 UTC
GONE=1794906000000   # 2026-11-17 09:00:00 UTC: past the default retention of 7 days
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fill() { # STORE
    "$OLD/store-gen" --store "$1" --container web --workload fixture --fixture "$fixture" \
        --samples 400 --start "$T" --windows 40 --empty-every 13 --seed 1 --batch 8
    "$OLD/store-gen" --store "$1" --container api --pid 7 --stacks 300 --samples 300 \
        --start "$T" --windows 20 --seed 2 --batch 4
    "$OLD/store-gen" --store "$1" --container ignored --workload hostile --stacks 20 \
        --samples 50 --start $((T + 600000)) --windows 3 --seed 3
    "$OLD/store-gen" --store "$1" --container gone --stacks 200 --samples 200 --start "$GONE" \
        --windows 10 --seed 4
}
range=(--since 2026-11-25T08:00:00Z --until 2026-11-25T10:00:00Z)
db=$work/v1.db
fill "$db" >/dev/null
# the retention deletes "gone" and the stacks only it used: the ids left have gaps
"$OLD/docker-flame" prune --store "$db" --retain 7d
python3 -c 'import sqlite3, sys; sqlite3.connect(sys.argv[1]).execute("PRAGMA wal_checkpoint(TRUNCATE)")' "$db"
gzip -9n <"$db" >"$here/sqlite-v1.db.gz"
"$OLD/docker-flame" show --store "$db" "${range[@]}" --format folded -o - | gzip -9n >"$here/old.folded.gz"
"$OLD/docker-flame" show web --store "$db" "${range[@]}" --format folded -o - | gzip -9n >"$here/old-web.folded.gz"
if [ -n "${2:-}" ]; then
    url=clickhouse://127.0.0.1:$2/flame_old
    fill "$url" >/dev/null
    "$OLD/docker-flame" show --store "$url" "${range[@]}" --format folded -o - |
        cmp - <(gunzip -c "$here/old.folded.gz")
    for t in meta stacks stack_ids windows; do
        curl -fsS "http://127.0.0.1:$2/" --data-binary "SELECT * FROM flame_old.$t FORMAT TabSeparated" |
            gzip -9n >"$here/clickhouse-v2.$t.tsv.gz"
    done
fi
