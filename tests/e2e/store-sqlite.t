#!/usr/bin/env bash
# The store's verbs on a SQLite store filled by build/store-gen (no Docker engine needed): show
# in every format and as a timeline, ls, stored ranges as inputs of diff and merge, prune, hostile
# labels and stacks, and one line plus the documented exit code for each bad case (unknown
# scheme 2, damaged file 7, newer version 7, unreachable server 7, empty range 8).
. "$(dirname "$0")/lib.sh"
FLAME=$BUILD/docker-flame
GEN=$BUILD/store-gen
[ -x "$FLAME" ] && [ -x "$GEN" ] || bail "build first (make): $FLAME, $GEN"
export DOCKER_FLAME_STORE=$TMP/profiles.db
cd "$TMP" || bail "no scratch dir"

# one error line on stderr, and the exit code
run_err() { "$@" >/dev/null 2>err.txt; echo $?; }
one_line() { [ "$(wc -l < err.txt)" = 1 ]; }
xml_ok() { xmllint --noout "$1" 2>/dev/null; }

"$GEN" --store "$DOCKER_FLAME_STORE" --container web --workload fixture --samples 990 \
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
    --start -2h --windows 720 --empty-every 50 >/dev/null
okif $? "2 h of 10-s windows of web"
"$GEN" --store "$DOCKER_FLAME_STORE" --container api --pid 7 --stacks 2000 --samples 500 \
    --start -1h --windows 360 >/dev/null
okif $? "1 h of api (a larger workload)"

"$FLAME" show web --since 30m -o web.svg 2>show.txt
okif $? "show web --since 30m"
like "$(cat show.txt)" "wrote web.svg \((17[89]|18[01]) windows" "about 180 windows of 10 s"
check "the SVG is well-formed" xml_ok web.svg
"$FLAME" show web --since 30m --format folded -o - >web.folded 2>/dev/null
okif $? "folded to standard output"
like "$(head -1 web.folded)" "^worker-.*Work\.step.* [0-9]+$" "folded lines of the fixture's stacks"
"$FLAME" show web api --since 30m -o both.json 2>/dev/null
okif $? "two containers, speedscope"
like "$(head -c 200 both.json)" "speedscope" "a speedscope file"
"$FLAME" show web --since 2h --timeline -o tl.svg 2>/dev/null
okif $? "--timeline"
check "the timeline is well-formed" xml_ok tl.svg
like "$(cat tl.svg)" "web, JVM 1 on bench-host" "a row for web's JVM"
like "$(grep -c '<rect class="b"' tl.svg)" "^[0-9]{3}" "hundreds of bars"
like "$(cat tl.svg)" "<text [^>]*>Samples per second: web, " "a cpu timeline: samples per second"
# a wall timeline (record --mode wall: values in ns) says its unit: threads, ns per ns of wall time
"$GEN" --store "$DOCKER_FLAME_STORE" --container web --workload fixture --samples 990 --type wall \
    --fixture "$ROOT/tests/data/fold/jdk17-container-work.improved.txt" \
    --start -1h --windows 60 --seed 9 >/dev/null
okif $? "10 min of web's wall windows"
"$FLAME" show web --mode wall --since 2h --timeline -o wtl.svg 2>/dev/null
okif $? "--mode wall --timeline"
check "the wall timeline is well-formed" xml_ok wtl.svg
like "$(cat wtl.svg)" "<text [^>]*>Wall clock in threads \(ns per ns\): web, " "titled in its unit"
is "$(grep -c 'Samples per second\|samples (' wtl.svg)" 0 "no samples in it"
like "$(cat wtl.svg)" "<title>web, JVM 1 on bench-host: [^<]* [0-9]+ ns \([0-9]+\.[0-9]{2} threads" "a bar: its ns and threads"
like "$(cat wtl.svg)" ">[0-9]+\.[0-9]{2} threads</text>" "the scale in threads"

out=$("$FLAME" ls)
okif $? "ls"
like "$out" "web .*eclipse-temurin:17-jre +1 +17\.0\.9\+9 +cpu +bench-host .* 720 " "web: its JVM (pid 1, Java 17.0.9+9), cpu, 720 windows"
like "$out" "api .* 360 " "api: 360 windows"
like "$out" "stacks, .* on disk \($TMP/profiles.db\)" "the footer names the store"

"$FLAME" diff web@-2h..-1h web@-1h -o d.svg >diff.txt 2>&1
okif $? "diff of two stored ranges"
check "diff.svg and its mirror" test -s d.svg -a -s d.mirror.svg
"$FLAME" merge web@-1h api@-1h -o m.folded 2>/dev/null
okif $? "merge of two stored ranges"
like "$(cat m.folded)" "Work\.step" "holds web's stacks"
like "$(cat m.folded)" "OrderController" "and api's"
is "$(run_err "$FLAME" diff web@whenever web@-1h)" 2 "a bad stored range: exit 2"
like "$(cat err.txt)" "CONTAINER\[:PID\]@SINCE\.\.UNTIL" "which says the syntax"
"$FLAME" diff api:7@-1h api@-1h --format folded -o same.folded 2>/dev/null
okif $? "a stored input of one JVM (api:7)"
is "$(awk '$(NF - 1) != $NF' same.folded | wc -l)" 0 "api's only JVM alone is api: no stack changed"
is "$(run_err "$FLAME" show api:8 --since 2h)" 8 "a JVM that is not stored: exit 8"
like "$(cat err.txt)" "nothing stored for api:8 .*the store has nothing of it" "said so"
is "$(run_err "$FLAME" ls api:seven)" 2 "a bad JVM selector: exit 2"
check "one line" one_line
is "$(run_err "$FLAME" diff nope@-1h web@-1h)" 8 "a container with nothing stored: exit 8"

is "$(run_err "$FLAME" show web --since 5h --until 3h)" 8 "an empty range: exit 8"
check "one line" one_line
like "$(cat err.txt)" "nothing stored for web from .*; the store has it from" "saying what is stored"
is "$(run_err "$FLAME" show web --since yesterday)" 2 "a bad time: exit 2"
like "$(cat err.txt)" "--since: \"yesterday\" is not a time" "naming the option"
is "$(run_err "$FLAME" show web --store mysql://x/y)" 2 "an unknown scheme: exit 2"
check "one line" one_line
printf 'not a database at all %.0s' $(seq 300) > junk.db
is "$(run_err "$FLAME" show web --store junk.db)" 7 "a file that is no store: exit 7"
check "one line" one_line
like "$(cat err.txt)" "not a docker-flame store, or a damaged one" "said so"
cp profiles.db newer.db
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(\"UPDATE meta SET value='9' WHERE key='schema_version'\"); c.commit()" newer.db
is "$(run_err "$FLAME" ls --store newer.db)" 7 "a store of a newer version: exit 7"
like "$(cat err.txt)" "written by a newer docker-flame \(store version 9" "said so"
is "$(run_err "$FLAME" show web --store clickhouse://127.0.0.1:1/db)" 7 "an unreachable server: exit 7"
check "one line" one_line
like "$(cat err.txt)" "clickhouse://127.0.0.1:1/db: cannot reach the server" "said so"

# a store opened to read is never written: another program's database keeps its journal mode
# and bytes (show, ls, a Tab), an empty file stays empty, a missing store is not made
python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA journal_mode=DELETE'); c.execute('CREATE TABLE songs(t)'); c.commit()" songs.db
sum0=$(sha256sum < songs.db)
is "$(run_err "$FLAME" ls --store songs.db)" 7 "ls of another program's database: exit 7"
like "$(cat err.txt)" "songs.db: a SQLite database, but not a docker-flame store" "said so"
is "$(run_err "$FLAME" show web --store songs.db)" 7 "show: the same"
"$FLAME" __complete flame show --store songs.db "" >/dev/null 2>&1
is "$(run_err "$FLAME" prune --store songs.db)" 7 "prune: the same"
jm=$(python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA journal_mode').fetchone()[0])" songs.db)
is "$jm" delete "its journal mode is still its own (not WAL)"
is "$(sha256sum < songs.db)" "$sum0" "its bytes are untouched"
: > empty.db
is "$(run_err "$FLAME" ls --store empty.db)" 7 "ls of an empty file: exit 7"
like "$(cat err.txt)" "empty.db: an empty file, not a docker-flame store" "said so"
"$FLAME" __complete flame show --store empty.db "" >/dev/null 2>&1
"$FLAME" show web --store empty.db >/dev/null 2>&1
is "$(stat -c %s empty.db)" 0 "it stays empty (ls, show, a Tab)"
is "$(run_err "$FLAME" show web --store nodir/p.db)" 8 "show of a store not made yet: exit 8 (nothing stored)"
like "$(cat err.txt)" "nodir/p.db: no store there \(docker flame record makes it\)" "said so"
"$FLAME" ls --store nodir/p.db >/dev/null 2>&1
check "and it is not made" test ! -e nodir

"$GEN" --store hostile.db --container ignored --workload hostile --stacks 50 --samples 200 \
    --start -10m --windows 10 >/dev/null
okif $? "hostile labels and stacks stored"
"$FLAME" show --store hostile.db --since 1h -o h.svg 2>/dev/null
okif $? "show of every container of it"
check "the SVG is well-formed" xml_ok h.svg
unlike "$(cat h.svg)" "<script>alert|<svg onload" "no markup from the container"
"$FLAME" show --store hostile.db --since 1h --timeline -o htl.svg 2>/dev/null
check "the timeline is well-formed" xml_ok htl.svg
out=$("$FLAME" ls --store hostile.db)
unlike "$out" $'[\x01\x1b]' "ls prints no control bytes of the labels"

before=$(stat -c %s profiles.db)
"$FLAME" prune --retain 90m 2>prune.txt
okif $? "prune --retain 90m"
like "$(cat prune.txt)" "deleted (17[89]|18[01]) windows older than 1h30m, merged [0-9,]+ windows into [0-9,]+ buckets" "the oldest half hour deleted, the rest merged"
is "$(run_err "$FLAME" show web --since 2h --until 95m)" 8 "nothing older than 90 min is left"
"$FLAME" show web --since 30m -o after.svg 2>after.txt
like "$(cat after.txt)" "wrote after.svg \((17[89]|18[01]) windows" "the last 30 min are intact"
"$FLAME" show web --since 80m --until 70m --format folded -o old.folded 2>old.txt
like "$(cat old.txt)" "wrote old.folded \(1[01] windows" "older ones are 1-minute buckets"
done_testing
