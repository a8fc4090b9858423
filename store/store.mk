# store/ build fragment (owned by the store module): the profile store (SQLite and ClickHouse
# backends, time parsing) goes into the plugin; its unit tests are tests/unit/store_<module>.c
# (and flame_timeline.c for flame/timeline.c); build/store-gen writes simulated windows into a
# store for the benchmarks and the ClickHouse tests. Included before plugin/plugin.mk, which
# links STORE_OBJS / STORE_LIBS into the plugin.
STORE_SRCS := $(wildcard store/*.c)
STORE_OBJS := $(STORE_SRCS:%.c=$(BUILD)/obj/%.o)
STORE_ASAN := $(STORE_SRCS:%.c=$(BUILD)/asan/%.o)
STORE_PKGS := sqlite3 libcurl zlib
STORE_CFLAGS := $(shell pkg-config --cflags $(STORE_PKGS))
STORE_LIBS := $(shell pkg-config --libs $(STORE_PKGS))

$(BUILD)/obj/store/%.o $(BUILD)/asan/store/%.o: EXTRA_CFLAGS += $(STORE_CFLAGS)
$(BUILD)/asan/tests/unit/store_%.o: EXTRA_CFLAGS += $(STORE_CFLAGS)

STORE_TEST_SRCS := $(wildcard tests/unit/store_*.c)
UNIT_TESTS += $(STORE_TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%.t)
$(BUILD)/tests/store_%.t: $(BUILD)/asan/tests/unit/store_%.o $(STORE_ASAN) $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ $(STORE_LIBS) -lm -lpthread

# flame/timeline.c is pure (in libflamecore); its test is named after it. An explicit rule: the
# pattern rule for flame_*.t may come with tests/tests.mk later, and an explicit one wins.
UNIT_TESTS += $(BUILD)/tests/flame_timeline.t
$(BUILD)/tests/flame_timeline.t: $(BUILD)/asan/tests/unit/flame_timeline.o $(BUILD)/asan/libflamecore.a
	@mkdir -p $(@D)
	$(CC) $(SANFLAGS) -o $@ $^ -lm -lpthread

all: $(BUILD)/store-gen
$(BUILD)/obj/bench/store-gen.o: EXTRA_CFLAGS += $(STORE_CFLAGS)
$(BUILD)/store-gen: $(BUILD)/obj/bench/store-gen.o $(STORE_OBJS) $(BUILD)/libflamecore.a
	$(CC) -o $@ $^ $(STORE_LIBS) -lm -lpthread
