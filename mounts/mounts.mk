# mounts/ build fragment (owned by the mounts module): the JVMTI perf-map agent.
# build/libflameagent.so is loaded into JVMs in arbitrary images, so it is position independent,
# exports only the Agent_* entry points, and depends on nothing but libc with old symbol
# versions (tests/e2e/agent-build.t checks `objdump -T`).
AGENT_SRCS := mounts/agent.c mounts/modes.c mounts/names.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/pic/%.o)
AGENT_CFLAGS := -fPIC -fvisibility=hidden -fno-stack-protector -U_FORTIFY_SOURCE \
                -isystem $(JAVA_HOME)/include -isystem $(JAVA_HOME)/include/linux
# -z nodelete: since JDK 16 HotSpot dlclose()s an agent whose Agent_OnAttach failed. Our JVMTI
# environment (and callbacks running on compiler threads) may outlive that call, so the code
# must stay mapped for the JVM's lifetime; a JVM cannot unload an agent anyway.
AGENT_LDFLAGS := -shared -Wl,-z,defs -Wl,-z,noexecstack -Wl,-z,relro -Wl,-z,nodelete \
                 -Wl,--as-needed -Wl,-soname,libflameagent.so

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(AGENT_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libflameagent.so: $(AGENT_OBJS)
	$(CC) $(AGENT_LDFLAGS) -o $@ $^

all: $(BUILD)/libflameagent.so

# Unit tests of the pure helpers (names, options, range split), with sanitizers.
$(BUILD)/tests/agent_names.t: tests/agent/test_agent_names.c mounts/names.c mounts/agent.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -O1 $(SANFLAGS) -o $@ tests/agent/test_agent_names.c mounts/names.c
UNIT_TESTS += $(BUILD)/tests/agent_names.t
