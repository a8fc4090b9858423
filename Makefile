# docker-flame — plain Makefile (nsjail/jattach scale). `make` builds everything offline;
# `make test` runs the whole suite (unit + end-to-end against a real engine).
# Each directory owns a fragment (*/*.mk) that adds its targets; this file holds the shared rules.

VERSION  := 0.1.0
BUILD    := build
# gcc unless CC is given (make's own default, cc, counts as not given; the fuzzers use clang).
ifeq ($(origin CC),default)
CC := gcc
endif
JAVA_HOME ?= $(shell dirname $$(dirname $$(readlink -f $$(command -v javac))))

WARN := -Wall -Wextra -Werror -Werror=shadow -Werror=strict-prototypes \
        -Werror=missing-prototypes -Werror=implicit-function-declaration -Werror=format=2 \
        -Werror=format-security -Wswitch-enum -Werror=misleading-indentation
CPPFLAGS := -D_GNU_SOURCE -I. -DFLAME_VERSION=\"$(VERSION)\"
CFLAGS   := -std=gnu11 -O2 -g $(WARN)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all

.PHONY: all test unit e2e bench fuzz clean check-format check-layers format install
# Objects made through pattern chains (tests, archives) are kept: a rebuild recompiles only what changed.
.SECONDARY:
all:

# Objects: release build in build/obj, sanitizer build (unit tests) in build/asan.
$(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c $< -o $@
$(BUILD)/asan/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -O1 $(SANFLAGS) $(EXTRA_CFLAGS) -MMD -MP -c $< -o $@

# Pure code shared by plugin and sidecar: common/ (errors, cleanup) and flame/ (fold, render).
CORE_SRCS := $(wildcard common/*.c) $(wildcard flame/*.c)
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/obj/%.o)
CORE_ASAN := $(CORE_SRCS:%.c=$(BUILD)/asan/%.o)
$(BUILD)/libflamecore.a: $(CORE_OBJS)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^
$(BUILD)/asan/libflamecore.a: $(CORE_ASAN)
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

include flame/flame.mk
include mounts/mounts.mk
include sidecar/sidecar.mk
include store/store.mk
include plugin/plugin.mk
include tests/tests.mk
include bench/bench.mk
include packaging/packaging.mk
-include fuzz/fuzz.mk

C_SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' -not -path './build/*')
check-format:
	clang-format --dry-run -Werror $(C_SOURCES)
format:
	clang-format -i $(C_SOURCES)
# The direction of includes between folders and plugin/'s layers (docs/PLUGIN.md "Files").
check-layers:
	@CC="$(CC)" PURE_SRCS="$(CMD_SRCS)" scripts/check-layers.sh

# The sidecar tarball's identity (plugin/run/image.c replaces an engine's image whose label differs).
all: $(BUILD)/flame-sidecar.tar.sha256
$(BUILD)/flame-sidecar.tar.sha256: $(BUILD)/flame-sidecar.tar
	sha256sum $< | cut -c1-16 > $@

install: all
	./install.sh --no-demo

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
