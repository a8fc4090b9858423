# sidecar/ build fragment (owned by the sidecar module). Add targets to 'all' and tests to UNIT_TESTS.
# build/flame-sidecar: a STATIC helper (runs in a FROM-scratch image); build/flame-sidecar.tar: the
# sidecar image's rootfs (perf + its libraries + the agent), imported as docker-flame-sidecar:VERSION.
SIDECAR_SRCS := $(filter-out sidecar/main.c,$(wildcard sidecar/*.c)) $(wildcard sidecar/recorder/*.c)
SIDECAR_OBJS := $(SIDECAR_SRCS:%.c=$(BUILD)/obj/%.o)
SIDECAR_ASAN := $(SIDECAR_SRCS:%.c=$(BUILD)/asan/%.o)

all: $(BUILD)/flame-sidecar $(BUILD)/flame-sidecar.tar

$(BUILD)/flame-sidecar: $(BUILD)/obj/sidecar/main.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	$(CC) -static -o $@ $^ -lseccomp -lcap -lm

# The image rootfs; the agent is optional at build time (the sidecar then falls back to
# Compiler.perfmap and says so).
$(BUILD)/flame-sidecar.tar: $(BUILD)/flame-sidecar sidecar/build-rootfs.sh $(wildcard $(BUILD)/libflameagent.so)
	sidecar/build-rootfs.sh $(BUILD)/flame-sidecar $(BUILD)/libflameagent.so $@

# Unit tests of the pure parsers, against the sanitizer build: tests/unit/sidecar_<module>.c.
SIDECAR_TEST_SRCS := $(wildcard tests/unit/sidecar_*.c)
UNIT_TESTS += $(SIDECAR_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
$(BUILD)/tests/sidecar_%.t: $(BUILD)/asan/tests/unit/sidecar_%.o $(SIDECAR_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lseccomp -lcap -lm

# The stack walker's recorded samples (tests/walk/README.md): the capture tool (run by hand, as
# root, against a JVM on the host) and the replay test are linked with pread interposed
# (tests/walk/fixture.c).
$(BUILD)/tests/walk-capture: $(BUILD)/obj/tests/walk/capture.o $(BUILD)/obj/tests/walk/fixture.o $(SIDECAR_OBJS) $(BUILD)/libflamecore.a
	@mkdir -p $(@D)
	$(CC) -Wl,--wrap=pread -o $@ $^ -lseccomp -lcap -lm
$(BUILD)/tests/sidecar_walk_replay.t $(BUILD)/tests/sidecar_walk_hostile.t: $(BUILD)/tests/%.t: $(BUILD)/asan/tests/unit/%.o $(BUILD)/asan/tests/walk/fixture.o $(SIDECAR_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -Wl,--wrap=pread -o $@ $^ -lseccomp -lcap -lm
