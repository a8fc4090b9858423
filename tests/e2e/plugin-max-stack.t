#!/usr/bin/env bash
# --max-stack N, a recording option of the shared table (common/contract.c ct_record_specs): from
# the profile verb's command line through the contract to the real sidecar's perf script, which
# keeps the first N entries of each callchain (the leaf's side). The fixture's Java stacks are
# deeper than 4 frames, so a profile without the option shows deeper stacks and one with
# --max-stack 3 none: each folded line is the thread's root frame plus at most 3 frames (with
# --no-inline, one frame per callchain entry; one JVM, so no java-<pid> root).
. "$(dirname "$0")/lib.sh"
real_plugin_setup
T="timeout -k 10 150"
fx=$(fixture pid1) || bail "fixture pid1 did not start"

# frames of the deepest folded stack of a file: fields before the count, split on ';'
deepest() { awk '{ sub(/ [0-9]+$/, ""); n = split($0, f, ";"); if (n > m) m = n } END { print m + 0 }' "$1"; }

$T docker flame -q -d 4 --no-inline --format folded -o full.folded "$fx" 2>full.err; rc=$?
is "$rc" 0 "without --max-stack: exit 0"
[ "$rc" = 0 ] || { fdiag "$(tail -5 full.err)"; bail "no profile"; }
full=$(deepest full.folded)
check "without --max-stack the fixture's stacks are deeper than 1 + 3 frames ($full)" test "$full" -gt 4

$T docker flame -q -d 4 --no-inline --max-stack 3 --format folded -o cut.folded "$fx" 2>cut.err; rc=$?
is "$rc" 0 "--max-stack 3: exit 0"
[ "$rc" = 0 ] || { fdiag "$(tail -5 cut.err)"; bail "no profile with --max-stack"; }
cut=$(deepest cut.folded)
check "--max-stack 3: no stack deeper than its root frame and 3 frames ($cut)" test "$cut" -le 4 -a "$cut" -ge 2
# perf cut the root side of the callchain: the workers' stacks keep the thread as their root and
# the Java method they run as their leaf, two frames between ("worker-0;lambda;work;countPrimes")
like "$(cat cut.folded)" '^worker-[0-9]+;[^;]+;[^;]+;FlameFixture\.[A-Za-z]+ [0-9]+$' \
    "--max-stack 3: a worker's stack is its thread, then the 3 frames nearest the leaf"

out=$($T docker flame -q --max-stack 0 "$fx" 2>&1); rc=$?
is "$rc" 2 "--max-stack 0: usage error (exit 2) before any sidecar"
like "$out" 'max-stack.*from 1 to 8192' "--max-stack 0: says the range"
no_sidecar_left
done_testing
