#!/usr/bin/env bash
# The build rules that `make all` succeeding once does not prove (HACKING.md "Build"): `make e2e`
# runs the end-to-end tests, gcc is the compiler unless CC is given, and the sidecar's tarball
# waits for the agent under `make -j` (a fresh clone used to pack an image without it, by luck
# of job order). Read from `make -n` into a scratch build directory: nothing is built.
. "$(dirname "$0")/../e2e/lib.sh"
cd "$ROOT" || bail "no repository"
B=$TMP/build

out=$(make -n e2e E2E=tests/e2e/host.t BUILD="$B" 2>&1)
like "$out" '(^|[[:space:]])tests/run tests/e2e/host\.t$' 'make e2e runs tests/run over the e2e files (E2E= picks some)'

out=$(make -n BUILD="$B" "$B/obj/common/err.o" 2>&1)
like "$out" '^gcc ' 'gcc compiles by default (make'"'"'s own CC=cc does not count as given)'
out=$(make -n CC=clang BUILD="$B" "$B/obj/common/err.o" 2>&1)
like "$out" '^clang ' 'CC=clang on the command line is obeyed'
out=$(CC=clang make -n BUILD="$B" "$B/obj/common/err.o" 2>&1)
like "$out" '^clang ' 'CC=clang from the environment is obeyed'

java_home=$(make -s --eval 'flame-java-home: ; @echo $(JAVA_HOME)' flame-java-home 2>/dev/null)
if [ -f "$java_home/include/jni.h" ]; then
    out=$(make -n BUILD="$B" "$B/flame-sidecar.tar" 2>&1)
    agent=$(printf '%s\n' "$out" | grep -n -- "-o $B/libflameagent.so" | cut -d: -f1 | head -1)
    pack=$(printf '%s\n' "$out" | grep -n 'build-rootfs.sh' | cut -d: -f1 | head -1)
    if [ -n "$agent" ] && [ -n "$pack" ] && [ "$agent" -lt "$pack" ]; then
        ok 'on a fresh build the agent is linked before the sidecar image is packed'
    else
        nok 'on a fresh build the agent is linked before the sidecar image is packed'
        fdiag "agent link at line '${agent}', build-rootfs.sh at line '${pack}' of make -n:" "$out"
    fi
else
    skip_or_fail "no JDK headers at '$java_home/include/jni.h': the agent cannot be built here"
fi

done_testing
