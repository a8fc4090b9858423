#!/usr/bin/env bash
# `docker flame render|merge|diff|show --format pprof` read by a real consumer, Go's `go tool pprof`
# (Debian's golang-go, ./install.sh --test-deps): totals, the ten largest self counts and every
# stack with its count equal the folded input's (tests/e2e/pprof-check.py); a differential is
# what `go tool pprof -diff_base` would show. No engine needed: the verbs run on files (and on
# a store written by build/store-gen).
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/e2e/pprof-lib.sh"
[ -x "$BUILD/docker-flame" ] || bail "build/docker-flame missing (make)"
if ! have_go; then
    skip_or_fail "go tool pprof missing (apt-get install golang-go, or ./install.sh --deps-only --test-deps)"
    done_testing
fi
plugin_env
go_env
cd "$TMP"

# JIT marks, an inline chain, kernel frames, threads with blanks, UTF-8, markup; 14 leaves with
# distinct self counts, so the top ten are well defined
cat > in.folded <<'F'
worker-0;Thread.run;Work.run_[j];Work.step_[j] 700
worker-0;Thread.run;Work.run_[j];Work.step_[j];Inl.x_[i];Inl.y_[i] 650
worker-0;Thread.run;Work.run_[j];Util.hash_[j] 600
worker-1;Thread.run;Work.run_[j];Util.hash_[j] 1
worker-1;Thread.run;Interpreter 550
C2 CompilerThre;thread_native_entry;C2Compiler::compile_method 500
GC Thread#0;GangWorker::loop;G1ParScanThreadState::trim_queue 450
worker-0;Thread.run;Work.run_[j];java.util.HashMap.get_[j] 400
worker-0;Thread.run;Work.run_[j];sys_write_[k] 350
worker-0;Thread.run;Work.run_[j];Café.<init>_[j] 300
worker-0;Thread.run;Work.run_[j];<a href="x">&amp_[j] 250
worker-0;Thread.run;Work.run_[j];[unknown] 200
VM Thread;VMThread::run 150
worker-2;Thread.run;Work.step 100
worker-2;Thread.run;Work.run_[j];Other.m_[j];Inl.x_[i] 50
F
docker flame render --format pprof -o r.pb.gz in.folded 2>err; rc=$?
is "$rc" 0 "render --format pprof: exit 0"
like "$(head -c 2 r.pb.gz | od -An -tx1)" '1f 8b' "the file is gzip"
pprof_matches in.folded r.pb.gz "render"
is "$PPROF_TOP" "Work.step;Inl.y;Util.hash" "render: the top functions by self count (inline frames by their own name)"
out=$(go tool pprof -raw r.pb.gz 2>&1)
like "$out" 'PeriodType: cpu nanoseconds' "period type cpu/nanoseconds"
like "$out" 'Period: 10101010' "period: 99 Hz by default"
docker flame render --format pprof --frequency 49 in.folded > r49.pb.gz; rc=$?
is "$rc" 0 "render to stdout"
like "$(go tool pprof -raw r49.pb.gz 2>&1)" 'Period: 20408163' "--frequency 49: period 20408163 ns"
cpu=$(go tool pprof -top -sample_index=cpu r49.pb.gz 2>&1 | sed -n 's/.*of \([0-9.]*\)s total.*/\1/p')
want=$(awk '{n += $NF} END {printf "%.2f", n / 49}' in.folded)
is "$cpu" "$want" "cpu total = samples / 49 Hz ($want s)"

# merge: two inputs summed
docker flame merge in.folded in.folded -o m.pb.gz 2>err; rc=$?
is "$rc" 0 "merge -o m.pb.gz: exit 0"
awk '{n=$NF; sub(/ [0-9]+$/, ""); print $0 " " 2*n}' in.folded > m.folded
pprof_matches m.folded m.pb.gz "merge"

# diff: AFTER as samples, BEFORE negated (pprof::base), as go tool pprof -diff_base writes it
printf 'main;a 10\nmain;b 5\n' > before.folded
printf 'main;a 4\nmain;c 6\n' > after.folded
docker flame diff --no-normalize --top 0 before.folded after.folded -o d.pb.gz 2>err; rc=$?
is "$rc" 0 "diff -o d.pb.gz: exit 0"
top=$(go tool pprof -top -sample_index=samples d.pb.gz 2>&1)
like "$top" ' -6 .* a$' "diff: a shrank by 6"
like "$top" ' -5 .* b$' "diff: b vanished (-5)"
like "$top" ' 6 .* c$' "diff: c is new (+6)"
like "$top" 'accounting for -5,' "diff: total change -5 (10 - 15)"
docker flame render --format pprof -o before.pb.gz before.folded && docker flame render --format pprof -o after.pb.gz after.folded
base=$(go tool pprof -top -sample_index=samples -diff_base before.pb.gz after.pb.gz 2>&1 | grep -E '^ +-?[0-9]')
is "$(printf '%s\n' "$top" | grep -E '^ +-?[0-9]')" "$base" "diff's pprof = go tool pprof -diff_base of the two inputs"
like "$(docker flame diff before.folded after.folded --format speedscope -o x.json 2>&1)" 'unknown value "speedscope": use svg, folded, pprof' "speedscope diff refused, the formats a diff has named"

# show: a stored range (windows simulated by build/store-gen) as pprof, with its time span
"$BUILD/store-gen" --store st.db --container web --windows 6 --start -1h --workload many \
    --stacks 300 --seed 3 >/dev/null 2>&1 || nok "store-gen"
docker flame show web --store st.db --since 2h --format pprof -o show.pb.gz 2>err; rc=$?
is "$rc" 0 "show --format pprof: exit 0"
docker flame show web --store st.db --since 2h --format folded -o show.folded 2>/dev/null
pprof_matches show.folded show.pb.gz "show"
raw=$(go tool pprof -raw show.pb.gz 2>&1)
like "$raw" 'Duration: 1m0s' "show: duration = the six stored 10-s windows"
like "$raw" 'Period: 10101010' "show: the period of the stored windows' rate (store-gen writes 99 Hz)"
like "$(go tool pprof -tags show.pb.gz 2>&1)" '\(  100%\): web$' "show: container label"

# hostile names: markup and control bytes as they are, invalid UTF-8 as U+FFFD
printf 'x\001\033[31m;</g>"\xff\xfe 3\n' > bad.folded
docker flame render --format pprof -o bad.pb.gz bad.folded; rc=$?
is "$rc" 0 "hostile names: exit 0"
like "$(go tool pprof -top -sample_index=samples bad.pb.gz 2>&1)" 'accounting for 3, 100% of 3 total' "hostile names: go tool pprof reads the file"
done_testing
