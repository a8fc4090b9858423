#!/usr/bin/env bash
# The stack walker's cost per sample (docs/BENCHMARKS.md "Stack walking"): the recorder's whole
# rewrite of each recorded sample (walk + names), cold and warm, on the fixtures of
# tests/data/walk. Goal: <= 20 us for a 100-frame stack, warm (the per100_us column).
# The JVM's memory comes from the recording: add ~1-2 us per read for a live /proc/<pid>/mem
# (cold_reads, warm_reads: reads per sample).
set -euo pipefail
cd "$(dirname "$0")/.."
make -s build/bench/walk-cost
build/bench/walk-cost tests/data/walk/*.walk.gz "${WALK_ROUNDS:-20}"
