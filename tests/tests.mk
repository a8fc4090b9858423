# Unit tests of the pure code: tests/unit/flame_<module>.c tests flame/<module> (or the verb
# flame_cmd_<verb> of plugin/cmd_<verb>.c), tests/unit/common_<module>.c tests common/<module>;
# each is linked against the sanitizer build of the core library. Other fragments append their
# own binaries to UNIT_TESTS.
CORE_TEST_SRCS := $(wildcard tests/unit/flame_*.c tests/unit/common_*.c)
UNIT_TESTS += $(CORE_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
CORE_TEST_LIBS := $(BUILD)/asan/libflamecmd.a $(BUILD)/asan/libflamecore.a

$(BUILD)/tests/flame_%.t: $(BUILD)/asan/tests/unit/flame_%.o $(CORE_TEST_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lm -lpthread
$(BUILD)/tests/common_%.t: $(BUILD)/asan/tests/unit/common_%.o $(CORE_TEST_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lm -lpthread

unit: $(UNIT_TESTS)
	prove --exec '' $(UNIT_TESTS)

# The whole suite: what the README's test command runs and .ci/run calls.
test: all $(UNIT_TESTS)
	tests/run
