# sidecar/ build fragment (owned by the sidecar module). Add targets to 'all' and tests to UNIT_TESTS.
# build/flame-sidecar: a STATIC helper (runs in a FROM-scratch image); build/flame-sidecar.tar: the
# sidecar image's rootfs (perf + its libraries + the agent), imported as docker-flame-sidecar:VERSION.
SIDECAR_SRCS := $(filter-out sidecar/main.c,$(wildcard sidecar/*.c sidecar/recorder/*.c))
SIDECAR_OBJS := $(SIDECAR_SRCS:%.c=$(BUILD)/obj/%.o)
SIDECAR_ASAN := $(SIDECAR_SRCS:%.c=$(BUILD)/asan/%.o)

all: $(BUILD)/flame-sidecar $(BUILD)/flame-sidecar.tar

$(BUILD)/flame-sidecar: $(BUILD)/obj/sidecar/main.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	$(CC) -static -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm

# The image rootfs. The agent is a prerequisite whenever the JDK's headers are there to build it,
# so `make -j` never packs the image before the agent exists; without a JDK the image has none
# (the sidecar then falls back to Compiler.perfmap and says so).
AGENT := $(if $(wildcard $(JAVA_HOME)/include/jni.h),$(BUILD)/libflameagent.so)
$(BUILD)/flame-sidecar.tar: $(BUILD)/flame-sidecar sidecar/build-rootfs.sh $(AGENT)
	sidecar/build-rootfs.sh $(BUILD)/flame-sidecar $(BUILD)/libflameagent.so $@

# Compiled BPF programs (none yet; sidecar/recorder/bpf/README.md): sidecar/recorder/bpf/NAME.bpf.c
# is built by clang for the BPF target into build/bpf/NAME.bpf.o, which becomes the C header
# build/bpf/NAME.bpf.h (`static const unsigned char NAME_bpf[]`, NAME of [a-z0-9_]). Its loader,
# beside it in sidecar/recorder/, includes "NAME.bpf.h": the static sidecar carries its programs.
BPF_CLANG  ?= clang
# asm/types.h lives in the multiarch directory, which clang -target bpf does not search
BPF_CFLAGS := -target bpf -O2 -g -Wall -Werror -D_GNU_SOURCE -I. \
              -I/usr/include/$(shell $(CC) -dumpmachine)
BPF_SRCS   := $(wildcard sidecar/recorder/bpf/*.bpf.c)
BPF_HDRS   := $(BPF_SRCS:sidecar/recorder/bpf/%.bpf.c=$(BUILD)/bpf/%.bpf.h)
$(BUILD)/bpf/%.bpf.o: sidecar/recorder/bpf/%.bpf.c
	@mkdir -p $(@D)
	$(BPF_CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/bpf/%.bpf.h: $(BUILD)/bpf/%.bpf.o
	{ echo '/* Generated from sidecar/recorder/bpf/$*.bpf.c by sidecar/sidecar.mk: do not edit. */'; \
	  echo 'static const unsigned char $*_bpf[] = {'; \
	  od -An -v -tx1 $< | sed 's/ *\([0-9a-f][0-9a-f]\)/0x\1,/g'; \
	  echo '};'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/sidecar/recorder/%.o $(BUILD)/asan/sidecar/recorder/%.o: EXTRA_CFLAGS += -I$(BUILD)/bpf
$(SIDECAR_OBJS) $(SIDECAR_ASAN): | $(BPF_HDRS)

# Unit tests of the pure parsers, against the sanitizer build: tests/unit/sidecar_<module>.c tests
# the module <module> anywhere under sidecar/ (sidecar_percpu.c: sidecar/recorder/percpu.c).
SIDECAR_TEST_SRCS := $(wildcard tests/unit/sidecar_*.c)
UNIT_TESTS += $(SIDECAR_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
$(BUILD)/tests/sidecar_%.t: $(BUILD)/asan/tests/unit/sidecar_%.o $(SIDECAR_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm
# The off-CPU program's test runs the compiled object itself (root: BPF_PROG_TEST_RUN).
$(BUILD)/asan/tests/unit/sidecar_offcpu_bpf.o: EXTRA_CFLAGS += -I$(BUILD)/bpf
$(BUILD)/asan/tests/unit/sidecar_offcpu_bpf.o: | $(BPF_HDRS)

# The stack walker's recorded samples (tests/walk/README.md): the capture tool (run by hand, as
# root, against a JVM on the host) and the replay test are linked with pread interposed
# (tests/walk/fixture.c).
$(BUILD)/tests/walk-capture: $(BUILD)/obj/tests/walk/capture.o $(BUILD)/obj/tests/walk/fixture.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	@mkdir -p $(@D)
	$(CC) -Wl,--wrap=pread -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm
$(BUILD)/tests/sidecar_walk_replay.t $(BUILD)/tests/sidecar_walk_hostile.t: $(BUILD)/tests/%.t: $(BUILD)/asan/tests/unit/%.o $(BUILD)/asan/tests/walk/fixture.o $(SIDECAR_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -Wl,--wrap=pread -o $@ $^ -lseccomp -lcap -lbpf -lelf -lz -lm
