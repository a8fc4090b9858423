#!/usr/bin/env bash
# `docker flame record` of a container with two JVMs (fixture `two`: FlameFixture, and the same
# with countPrimes twice as heavy): each JVM is stored as a series of its own, labelled with its
# pid and Java version, its stacks without the root frame that named it; `ls` lists both;
# CONTAINER:PID picks one in `show`, `ls` and the stored inputs of `diff`, CONTAINER merges them
# (the counts add up); the timeline has a row per JVM; a bad selector is one line, exit 2.
. "$(dirname "$0")/top-lib.sh"

fx=$(fixture two) || bail "fixture two did not start"
fname=$(docker inspect -f '{{.Name}}' "$fx"); fname=${fname#/}
DB=$TMP/jvms.db
stored() { local n; n=$(grep -c "stored (" "$1" 2>/dev/null); [ "${n:-0}" -ge "$2" ]; }

# the two JVMs' pids inside the container: the last NSpid of each java process
pids=()
for hp in $(docker top "$fx" -o pid,args | awk '$2 ~ /java$/ { print $1 }'); do
    pids+=("$(awk '/^NSpid:/ { print $NF }' "/proc/$hp/status")")
done
is "${#pids[@]}" 2 "two JVMs in the container (pids ${pids[*]})"
p1=${pids[0]:-0} p2=${pids[1]:-0}

timeout -k 10 300 docker flame record "$fx" --window 1s --store "$DB" >out 2>err &
pid=$!
if wait_for 120 stored err 5; then ok "five windows stored"; else nok "five windows stored"; fdiag "$(cat err)"; fi
ctrl_c "$pid"
wait $pid
is "$?" 0 "Ctrl-C: exit 0"

docker flame ls --store "$DB" >ls.txt 2>&1
okif $? "ls"
diag "$(cat ls.txt)"
is "$(awk -v c="$fname" '$1 == c && $4 ~ /^[0-9]+$/' ls.txt | wc -l)" 2 "ls: a line per JVM of the container"
# the sidecar's own perf, sampled in the container (issue of its own), is of no JVM: PID "-"
other=$(awk -v c="$fname" '$1 == c && $4 == "-" { gsub(",", "", $(NF - 2)); print $(NF - 2) }' ls.txt)
for p in "$p1" "$p2"; do
    like "$(cat ls.txt)" "^$fname +[0-9a-f]{12} +flame-fixture[^ ]* +$p +17\.[0-9.+]* " "JVM $p: its pid and Java version"
done

# each JVM alone: its own stacks, no root frame naming a JVM
docker flame show "$fname:$p1" --store "$DB" --since 10m --format folded -o one.folded 2>/dev/null
okif $? "show $fname:$p1"
docker flame show "$fname:$p2" --store "$DB" --since 10m --format folded -o two.folded 2>/dev/null
okif $? "show $fname:$p2"
like "$(cat one.folded)" 'FlameFixture\.(countPrimes|isPrime)' "JVM $p1's stacks name the workload"
like "$(cat two.folded)" 'FlameFixture\.(countPrimes|isPrime)' "JVM $p2's too"
unlike "$(cat one.folded two.folded)" '^java-[0-9]+' "no stack starts with a root frame naming a JVM"
docker flame show "$fname" --store "$DB" --since 10m --format folded -o both.folded 2>/dev/null
okif $? "show $fname: both JVMs"
total() { awk '{ s += $NF } END { print s + 0 }' "$1"; }
is "$(total both.folded)" "$(($(total one.folded) + $(total two.folded) + ${other:-0}))" \
    "merged: the two JVMs' counts (and those of no JVM) add up"
docker flame show "$fname" --pid "$p2" --store "$DB" --since 10m --format folded -o pid2.folded 2>/dev/null
check "--pid picks the same JVM as $fname:$p2" cmp -s pid2.folded two.folded

docker flame show "$fname" --store "$DB" --since 10m --timeline -o tl.svg 2>/dev/null
okif $? "show --timeline"
like "$(cat tl.svg)" "$fname, JVM $p1 on " "a timeline row for JVM $p1"
like "$(cat tl.svg)" "$fname, JVM $p2 on " "and one for JVM $p2"

docker flame ls "$fname:$p2" --store "$DB" >ls2.txt 2>&1
is "$(awk -v c="$fname" '$1 == c { print $4 }' ls2.txt)" "$p2" "ls $fname:$p2: that JVM's line only"

export DOCKER_FLAME_STORE=$DB
docker flame diff "$fname:$p1@-10m" "$fname:$p2@-10m" --format folded -o d.folded >d.txt 2>&1
okif $? "diff of the two JVMs' stored ranges"
like "$(head -1 d.folded)" ' [0-9]+ [0-9]+$' "a two-column profile"
docker flame show "$fname:x" --store "$DB" >/dev/null 2>bad.txt
is "$?" 2 "a bad selector: exit 2"
is "$(wc -l <bad.txt)" 1 "one line ($(cat bad.txt))"
like "$(cat bad.txt)" 'CONTAINER:PID' "saying the form"
docker flame diff "$fname:0@-10m" "$fname@-10m" >/dev/null 2>bad.txt
is "$?" 2 "pid 0 in a stored input: exit 2"
docker flame show "$fname:4242" --store "$DB" --since 10m >/dev/null 2>none.txt
is "$?" 8 "a JVM that was not recorded: exit 8"
like "$(cat none.txt)" "nothing stored for $fname:4242 .*the store has nothing of it" "saying so"
is "$(sidecars_of "$(docker inspect -f '{{.Id}}' "$fx")")" 0 "no sidecar left"
done_testing
