#!/usr/bin/env bash
# build/libflameagent.so is loaded into JVMs of arbitrary glibc images: it may need nothing but
# libc.so.6, no symbol version newer than GLIBC_2.17, and may export only the Agent_* entry
# points (anything else could clash with the JVM's or another agent's symbols).
. "$(dirname "$0")/lib.sh"
SO="$BUILD/libflameagent.so"
if [ ! -f "$SO" ]; then
    make -C "$ROOT" -s build/libflameagent.so >&2 || { echo "Bail out! cannot build $SO"; exit 1; }
fi

needed=$(readelf -d "$SO" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
okif $([ "$needed" = "libc.so.6 " ] && echo 0 || echo 1) "needs only libc.so.6 (got: $needed)"

newest=$(objdump -T "$SO" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
okif $(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V -C && echo 0 || echo 1) \
    "newest glibc symbol version is at most GLIBC_2.17 (got: $newest)"

exported=$(objdump -T "$SO" | awk '$2 == "g" && $4 != "*UND*" { print $NF }' | sort | tr '\n' ' ')
okif $([ "$exported" = "Agent_OnAttach Agent_OnLoad Agent_OnUnload " ] && echo 0 || echo 1) \
    "exports only the Agent_* entry points (got: $exported)"

okif $(readelf -lW "$SO" | grep -q 'GNU_STACK.*RWE' && echo 1 || echo 0) "no executable stack"
okif $(readelf -d "$SO" | grep -q 'FLAGS_1.*NODELETE' && echo 0 || echo 1) \
    "marked NODELETE (HotSpot 16+ dlclose()s an agent whose Agent_OnAttach failed)"
okif $(readelf -hW "$SO" | grep -q 'DYN (Shared object file)' && echo 0 || echo 1) "is a shared object"

done_testing
