# plugin/ build fragment (owned by the plugin module). Add targets to 'all' and tests to UNIT_TESTS.
# build/docker-flame: the Docker CLI plugin: the verbs and what they share in plugin/, its layers in
# plugin/engine/, plugin/run/ and plugin/out/ (docs/PLUGIN.md; `make check-layers`). Its pure verbs
# (fold, render, diff, merge: plugin/cmd_* and their argument helpers) need neither libcurl nor
# jansson and form build/libflamecmd.a, which the standalone build/flame-render and the benchmarks
# link too.
CMD_SRCS    := plugin/cmd_fold.c plugin/cmd_render.c plugin/cmd_diff.c plugin/cmd_merge.c \
               plugin/cli.c plugin/graph.c plugin/inputs.c plugin/opts.c \
               plugin/out/output.c plugin/out/jsonw.c
CMD_OBJS    := $(CMD_SRCS:%.c=$(BUILD)/obj/%.o)
CMD_ASAN    := $(CMD_SRCS:%.c=$(BUILD)/asan/%.o)
PLUGIN_SRCS := $(filter-out plugin/main.c plugin/render_main.c $(CMD_SRCS),\
                 $(wildcard plugin/*.c plugin/*/*.c))
PLUGIN_OBJS := $(PLUGIN_SRCS:%.c=$(BUILD)/obj/%.o)
PLUGIN_ASAN := $(PLUGIN_SRCS:%.c=$(BUILD)/asan/%.o)
PLUGIN_PKGS := libcurl jansson libcrypto
PLUGIN_CFLAGS := $(shell pkg-config --cflags $(PLUGIN_PKGS))
PLUGIN_LIBS := $(shell pkg-config --libs $(PLUGIN_PKGS)) $(shell pkg-config --libs ncursesw) -lpthread -lm

$(BUILD)/obj/plugin/%.o $(BUILD)/asan/plugin/%.o: EXTRA_CFLAGS += $(PLUGIN_CFLAGS)
$(BUILD)/asan/tests/unit/plugin_%.o: EXTRA_CFLAGS += $(PLUGIN_CFLAGS)

$(BUILD)/libflamecmd.a: $(CMD_OBJS)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(BUILD)/asan/libflamecmd.a: $(CMD_ASAN)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

all: $(BUILD)/docker-flame $(BUILD)/flame-render

$(BUILD)/docker-flame: $(BUILD)/obj/plugin/main.o $(PLUGIN_OBJS) $(STORE_OBJS) $(BUILD)/libflamecmd.a $(BUILD)/libflamecore.a
	$(CC) -o $@ $^ $(PLUGIN_LIBS) $(STORE_LIBS)

# flame-render: `docker flame render` without the plugin (bench, and users who only want SVGs).
$(BUILD)/flame-render: $(BUILD)/obj/plugin/render_main.o $(BUILD)/libflamecmd.a $(BUILD)/libflamecore.a
	$(CC) -o $@ $^ -lm -lpthread -lz

# Unit tests named after the module they test: tests/unit/plugin_<module>.c tests the module
# <module> anywhere under plugin/ (plugin_proto.c: plugin/run/proto.c), and the contract's round
# trip (common_contract.c), which needs the plugin's reader of the stream.
PLUGIN_TEST_SRCS := $(wildcard tests/unit/plugin_*.c) $(wildcard tests/unit/common_*.c)
UNIT_TESTS += $(PLUGIN_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
$(BUILD)/asan/tests/unit/common_%.o: EXTRA_CFLAGS += $(PLUGIN_CFLAGS)

PLUGIN_TEST_DEPS := $(PLUGIN_ASAN) $(STORE_ASAN) $(BUILD)/asan/libflamecmd.a $(BUILD)/asan/libflamecore.a
$(BUILD)/tests/plugin_%.t: $(BUILD)/asan/tests/unit/plugin_%.o $(PLUGIN_TEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ $(PLUGIN_LIBS) $(STORE_LIBS)
$(BUILD)/tests/common_%.t: $(BUILD)/asan/tests/unit/common_%.o $(PLUGIN_TEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ $(PLUGIN_LIBS) $(STORE_LIBS)

.PHONY: plugin-e2e
plugin-e2e: $(BUILD)/docker-flame
	prove --exec '' tests/e2e/plugin-*.t
