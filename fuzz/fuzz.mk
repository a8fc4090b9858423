# fuzz/ fragment: libFuzzer harnesses (make fuzz) and the replay of every kept input in the normal
# ASan build (build/tests/fuzz_regress_<harness>.t, part of `make test`). See docs/FUZZING.md.
#   make fuzz                         build every harness, run each FUZZ_SECONDS
#   make fuzz FUZZ_HARNESSES="fold proto" FUZZ_SECONDS=300 FUZZ_JOBS=2
#   make fuzz-build                   only build them (build/fuzz/fuzz_<harness>)
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 65536
FUZZ_JOBS    ?= 1
FUZZ_CFLAGS  := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer -Wall -Wextra

# Each harness: its sources under test (built straight into it) and its libraries. A harness
# whose sources are not all there yet (a module still being written) is left out. flame/ is one
# library (the profile table is shared by folding, loading, rendering, diff): its harnesses take
# all of it.
FUZZ_COMMON          := common/err.c common/atomic.c common/args.c common/contract.c
FUZZ_FLAME           := $(wildcard flame/*.c) $(FUZZ_COMMON)
FUZZ_SRC_fold        := $(FUZZ_FLAME)
FUZZ_SRC_fold_compat := $(FUZZ_FLAME)
FUZZ_SRC_profile     := $(FUZZ_FLAME)
FUZZ_SRC_svg_xml     := $(FUZZ_FLAME)
FUZZ_SRC_svg_load    := $(FUZZ_FLAME)
FUZZ_SRC_diff        := $(FUZZ_FLAME)
FUZZ_SRC_perfmap     := sidecar/perfmap.c $(FUZZ_COMMON)
FUZZ_SRC_proc        := sidecar/discover.c sidecar/recorder/perfstream.c sidecar/hostproc.c sidecar/symfs_parse.c \
                        $(FUZZ_COMMON)
FUZZ_SRC_attach      := sidecar/attach.c sidecar/target.c $(FUZZ_COMMON)
FUZZ_SRC_demux       := plugin/engine/demux.c plugin/run/proto.c $(FUZZ_FLAME)
FUZZ_SRC_proto       := plugin/run/proto.c $(FUZZ_FLAME)
FUZZ_SRC_endpoint    := plugin/engine/endpoint.c $(FUZZ_COMMON)
FUZZ_SRC_engine      := plugin/engine/engine.c plugin/engine/endpoint.c plugin/engine/demux.c \
                        plugin/run/proto.c $(FUZZ_FLAME)
FUZZ_LIB_FLAME    := -lm -lpthread -lz
FUZZ_LIB_fold     := $(FUZZ_LIB_FLAME)
FUZZ_LIB_fold_compat := $(FUZZ_LIB_FLAME)
FUZZ_LIB_profile  := $(FUZZ_LIB_FLAME)
FUZZ_LIB_svg_xml  := $(shell pkg-config --cflags --libs jansson 2>/dev/null) $(FUZZ_LIB_FLAME)
FUZZ_LIB_svg_load := $(FUZZ_LIB_FLAME)
FUZZ_LIB_diff     := $(FUZZ_LIB_FLAME)
FUZZ_LIB_demux    := $(shell pkg-config --cflags --libs jansson 2>/dev/null) $(FUZZ_LIB_FLAME)
FUZZ_LIB_proto    := $(FUZZ_LIB_demux)
FUZZ_LIB_endpoint := $(shell pkg-config --cflags --libs jansson libcrypto 2>/dev/null)
FUZZ_LIB_engine   := $(shell pkg-config --cflags --libs jansson libcurl libcrypto 2>/dev/null) \
                     $(FUZZ_LIB_FLAME)
FUZZ_DEF_fold_compat := -DFUZZ_COMPAT
FUZZ_MAIN_fold_compat := fuzz/fuzz_fold.c

FUZZ_ALL := fold fold_compat profile svg_xml svg_load diff perfmap proc attach demux proto endpoint engine
fuzz_main = $(or $(FUZZ_MAIN_$(1)),fuzz/fuzz_$(1).c)
fuzz_ready = $(if $(strip $(foreach s,$(FUZZ_SRC_$(1)) $(call fuzz_main,$(1)),$(if $(wildcard $(s)),,x))),,$(1))
FUZZ_HARNESSES ?= $(foreach h,$(FUZZ_ALL),$(call fuzz_ready,$(h)))
FUZZ_HDRS := fuzz/fuzz.h fuzz/xmlcheck.h fuzz/fuzz.mk $(wildcard common/*.h flame/*.h sidecar/*.h sidecar/*/*.h plugin/*.h \
             plugin/*/*.h) \
             $(wildcard flame/render_js.h)

define fuzz_rules
$(BUILD)/fuzz/fuzz_$(1): $(call fuzz_main,$(1)) $(FUZZ_SRC_$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(FUZZ_CFLAGS) $(FUZZ_DEF_$(1)) -o $$@ $(call fuzz_main,$(1)) \
	    $(FUZZ_SRC_$(1)) $(FUZZ_LIB_$(1))

# The same harness replaying fuzz/corpus/$(1)/ and fuzz/regressions/$(1)/ in the test build
# (plus float-cast-overflow, which gcc leaves out of -fsanitize=undefined and clang found).
$(BUILD)/tests/fuzz_regress_$(1).t: tests/unit/fuzz_regress_main.c $(call fuzz_main,$(1)) \
	    $(FUZZ_SRC_$(1)) $(FUZZ_HDRS)
	@mkdir -p $$(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -O1 $(SANFLAGS) -fsanitize=float-cast-overflow $(FUZZ_DEF_$(1)) -DFUZZ_NAME='"$(1)"' -o $$@ \
	    tests/unit/fuzz_regress_main.c $(call fuzz_main,$(1)) $(FUZZ_SRC_$(1)) $(FUZZ_LIB_$(1))
endef
$(foreach h,$(FUZZ_ALL),$(eval $(call fuzz_rules,$(h))))

FUZZ_BINS := $(FUZZ_HARNESSES:%=$(BUILD)/fuzz/fuzz_%)
FUZZ_REGRESS := $(FUZZ_HARNESSES:%=$(BUILD)/tests/fuzz_regress_%.t)
UNIT_TESTS += $(FUZZ_REGRESS)
# tests.mk expanded its prerequisite lists before this fragment was read: add ours.
test unit: $(FUZZ_REGRESS)

.PHONY: fuzz fuzz-build
fuzz-build: $(FUZZ_BINS)
fuzz: $(FUZZ_BINS)
	FUZZ_SECONDS=$(FUZZ_SECONDS) FUZZ_MAX_LEN=$(FUZZ_MAX_LEN) FUZZ_JOBS=$(FUZZ_JOBS) \
	    fuzz/run.sh $(BUILD)/fuzz $(FUZZ_HARNESSES)
