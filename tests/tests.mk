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

# Tests of the repository itself (tests/repo/*.t, bash TAP, no engine): the build's rules, and
# docs/ and README.md in step with --help and the tree. They read the plugin's --help.
REPO_TESTS := $(wildcard tests/repo/*.t)
unit: $(UNIT_TESTS) $(BUILD)/docker-flame
	prove --exec '' $(UNIT_TESTS) $(REPO_TESTS)

# `make e2e`: the end-to-end tests only, against a real engine (tests/run starts one, or uses
# FLAME_ENGINE_DIR's); E2E="tests/e2e/record.t tests/e2e/host.t" runs some of them.
E2E ?= $(wildcard tests/e2e/*.t)
e2e: all
	tests/run $(E2E)

# The whole suite: what the README's test command runs and .ci/run calls. The format and layer
# checks come first: they are the cheapest failures (clang-format as Debian ships it, version 14).
test: check-format check-layers all $(UNIT_TESTS)
	tests/run
