# Unit tests: tests/unit/test_*.c are pure-code tests linked against the sanitizer build of the
# core library; other fragments append their own binaries to UNIT_TESTS.
CORE_TEST_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_TESTS += $(CORE_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)

$(BUILD)/tests/test_%.t: $(BUILD)/asan/tests/unit/test_%.o $(BUILD)/asan/libflamecmd.a $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lm -lpthread

unit: $(UNIT_TESTS)
	prove --exec '' $(UNIT_TESTS)

# The whole suite: what the README's test command runs and .ci/run calls.
test: all $(UNIT_TESTS)
	tests/run
