# `make bench`: every bench/bench-*.sh prints figures and ratios against docs/BENCHMARKS.md (reference figures).
bench: all
	@set -e; for s in bench/bench-*.sh; do echo "== $$s"; "$$s"; done

# `make bench-overhead`: what recording costs a JVM through `docker flame`, per-thread
# vs per-CPU sampling, ABBA windows (bench/overhead.py; needs a Docker engine, see its header).
# Not part of `make bench` (which needs no engine). BENCH_OVERHEAD_ARGS: e.g. --rounds 7.
.PHONY: bench-overhead
bench-overhead: all
	bench/overhead.py $(BENCH_OVERHEAD_ARGS)

# `make bench-overhead-record`: the same through `docker flame record` at its defaults
# (10-s windows, 49 Hz; the recorder running through both B windows), CPU-bound fixture, with the
# sidecar's and the plugin's own CPU. BENCH_RECORD_ARGS: e.g. --rounds 10.
BENCH_RECORD_ARGS ?= --rounds 6 --window 20
.PHONY: bench-overhead-record
bench-overhead-record: all
	bench/overhead.py --modes record --fixtures cpubound $(BENCH_RECORD_ARGS)

# `make bench-overhead-modes`: the cost of `--mode alloc` and `--mode lock` (each alone, as a user
# runs it) on an allocation-heavy, a monitor-contended, a CPU-bound and the ping-pong fixture
# (j.u.c. parks: lock's off-CPU part). BENCH_MODES_ARGS: e.g. --rounds 9.
BENCH_MODES_ARGS ?= --rounds 5 --window 6
.PHONY: bench-overhead-modes
bench-overhead-modes: all
	bench/overhead.py --modes alloc,lock --fixtures alloc,contended,cpubound,pingpong $(BENCH_MODES_ARGS)

# `make bench-host`: `docker flame host` overhead with 8 containers and post-processing cost per
# 100k samples (bench/host.sh; needs an engine with the fixture and sidecar images).
.PHONY: bench-host
bench-host: all
	bench/host.sh

# `make bench-native`: native frames named (bench/native-names.sh; docs/BENCHMARKS.md "Native
# frames"): unnamed-frame share and the sidecar's extra time; OLD_TAR=<older sidecar tarball>
# adds the "before" runs. Needs an engine with the fixture and sidecar images, and root.
.PHONY: bench-native
bench-native: all
	bench/native-names.sh

# `make bench-interp`: per-sample cost in the sampled thread of the registers and the 16 and 48
# KiB stack copies that the walk and interpreted-frame naming add (bench/interp-cost.c; docs/BENCHMARKS.md
# "Interpreted frames"). Not part of `make bench`: it samples at 5 kHz for ~30 s.
.PHONY: bench-interp
bench-interp: $(BUILD)/bench/interp-cost
	$(BUILD)/bench/interp-cost 5000 3 3 48
$(BUILD)/bench/interp-cost: bench/interp-cost.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fno-omit-frame-pointer -o $@ $<

# The stack walker's cost per sample on the recorded samples of real JVMs (bench/walk-cost.c,
# bench/bench-walk.sh; docs/BENCHMARKS.md "Stack walking"): part of `make bench`.
$(BUILD)/bench/walk-cost: $(BUILD)/obj/bench/walk-cost.o $(BUILD)/obj/tests/walk/fixture.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	@mkdir -p $(@D)
	$(CC) -Wl,--wrap=pread -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm
bench: $(BUILD)/bench/walk-cost

# `make bench-offcpu PID=<a process of the target's PID namespace>`: the off-CPU programs' cost
# per context switch and their samples (bench/offcpu-cost.c; docs/BENCHMARKS.md "Off-CPU").
# Root, on the host. Not part of `make bench`.
.PHONY: bench-offcpu
bench-offcpu: $(BUILD)/bench/offcpu-cost
	$(BUILD)/bench/offcpu-cost $(PID) 10
# `make bench-offcpu-ab`: the same program's cost to a JVM switching ~1 M times a second, ABBA
# windows of the PingPong fixture started by the script (bench/offcpu-ab.py; root, host java).
# BENCH_OFFCPU_ARGS="--rounds 5 --mode wall --cost <another build's offcpu-cost>".
.PHONY: bench-offcpu-ab
bench-offcpu-ab: $(BUILD)/bench/offcpu-cost
	bench/offcpu-ab.py $(BENCH_OFFCPU_ARGS)
$(BUILD)/bench/offcpu-cost: $(BUILD)/obj/bench/offcpu-cost.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	@mkdir -p $(@D)
	$(CC) -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm
