# Unit tests, named after the module they test: tests/unit/<dir>_<module>.c tests <dir>/<module>.c
# (flame_, common_, plugin_, sidecar_; plugin_cmd_<verb> tests the verb plugin/cmd_<verb>.c). The
# flame_ ones are linked here against the sanitizer build of the core library; the other
# fragments (plugin.mk, sidecar.mk, mounts.mk) build theirs and append them to UNIT_TESTS.
CORE_TEST_SRCS := $(wildcard tests/unit/flame_*.c)
UNIT_TESTS += $(CORE_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
CORE_TEST_LIBS := $(BUILD)/asan/libflamecmd.a $(BUILD)/asan/libflamecore.a

$(BUILD)/tests/flame_%.t: $(BUILD)/asan/tests/unit/flame_%.o $(CORE_TEST_LIBS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lm -lpthread -lz

unit: $(UNIT_TESTS)
	prove --exec '' $(UNIT_TESTS)

# The whole suite: what the README's test command runs and .ci/run calls. The format and layer
# checks come first: they are the cheapest failures (clang-format as Debian ships it, version 14).
test: check-format check-layers all $(UNIT_TESTS)
	tests/run
