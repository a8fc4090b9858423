# plugin/ build fragment (owned by the plugin module). Add targets to 'all' and tests to UNIT_TESTS.
# build/docker-flame: the Docker CLI plugin. libflamecore.a is linked --whole-archive because
# plugin/weak.h references flame/ weakly (weak references alone do not pull archive members).
PLUGIN_SRCS := $(filter-out plugin/main.c,$(wildcard plugin/*.c))
PLUGIN_OBJS := $(PLUGIN_SRCS:%.c=$(BUILD)/obj/%.o)
PLUGIN_ASAN := $(PLUGIN_SRCS:%.c=$(BUILD)/asan/%.o)
PLUGIN_PKGS := libcurl jansson libcrypto
PLUGIN_CFLAGS := $(shell pkg-config --cflags $(PLUGIN_PKGS))
PLUGIN_LIBS := $(shell pkg-config --libs $(PLUGIN_PKGS)) $(shell pkg-config --libs ncursesw) -lpthread -lm

$(BUILD)/obj/plugin/%.o $(BUILD)/asan/plugin/%.o: EXTRA_CFLAGS += $(PLUGIN_CFLAGS)
$(BUILD)/asan/tests/unit/plugin_test_%.o: EXTRA_CFLAGS += $(PLUGIN_CFLAGS)

all: $(BUILD)/docker-flame

$(BUILD)/docker-flame: $(BUILD)/obj/plugin/main.o $(PLUGIN_OBJS) $(BUILD)/libflamecore.a
	$(CC) -o $@ $(BUILD)/obj/plugin/main.o $(PLUGIN_OBJS) \
	    -Wl,--whole-archive $(BUILD)/libflamecore.a -Wl,--no-whole-archive $(PLUGIN_LIBS)

PLUGIN_TEST_SRCS := $(wildcard tests/unit/plugin_test_*.c)
UNIT_TESTS += $(PLUGIN_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)

$(BUILD)/tests/plugin_test_%.t: $(BUILD)/asan/tests/unit/plugin_test_%.o $(PLUGIN_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $< $(PLUGIN_ASAN) \
	    -Wl,--whole-archive $(BUILD)/asan/libflamecore.a -Wl,--no-whole-archive $(PLUGIN_LIBS)

.PHONY: plugin-e2e
plugin-e2e: $(BUILD)/docker-flame
	prove --exec '' tests/e2e/plugin-*.t
