#!/usr/bin/env bash
# Record the stack walker's replay fixtures (tests/walk/README.md) from JVMs started here, on the
# host, as root (per-CPU perf events and another process's memory):
#     tests/walk/capture.sh [NAME...]      # default: every fixture below
# Writes tests/data/walk/NAME.walk.gz. JDK17/JDK25 point at the JDKs (default: Debian's 17,
# Temurin 25 under /usr/lib/jvm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
JDK17=${JDK17:-/usr/lib/jvm/java-17-openjdk-amd64}
JDK25=${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}
out=$root/tests/data/walk
tmp=$(mktemp -d)
jpid=
cleanup() { [ -n "$jpid" ] && kill "$jpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
make -C "$root" -s build/tests/walk-capture
"$JDK17/bin/javac" -nowarn -d "$tmp/cls" "$root/tests/fixtures/java/FlameFixture.java" \
    "$root/tests/fixtures/java/CompilerLoop.java" 2>/dev/null
"$JDK17/bin/javac" -nowarn -d "$tmp/cls" "$here/Deep.java"
mkdir -p "$out"
# NAME JDK JAVA-OPTIONS... -- MAIN ARGS...
fixture() {
    local name=$1 jdk=$2; shift 2
    "$jdk/bin/java" -Xmx64m -XX:+UseSerialGC -cp "$tmp/cls" "$@" >"$tmp/$name.log" 2>&1 &
    jpid=$!
    sleep "${WARMUP:-8}"
    "$root/build/tests/walk-capture" -n "${SAMPLES:-250}" -t 60 ${CAPTURE_OPTS:-} "$jpid" "$tmp/$name.walk"
    kill "$jpid"; wait "$jpid" 2>/dev/null || true; jpid=
    gzip -9 -c "$tmp/$name.walk" >"$out/$name.walk.gz"
    echo "$name: $(stat -c %s "$out/$name.walk.gz") bytes"
}
want() { [ $# -eq 0 ] || [[ " $* " == *" $name "* ]]; }
run=("$@")
all=(jdk17-fp jdk17-nofp jdk25-fp jdk25-nofp jdk17-xint jdk17-deep jdk25-deep jdk17-javac jdk25-javac)
for name in "${all[@]}"; do
    [ ${#run[@]} -eq 0 ] || [[ " ${run[*]} " == *" $name "* ]] || continue
    work=(FlameFixture --threads 2 --native --syscalls --churn)
    deep=(-XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Deep::* Deep 160)
    case $name in
    jdk17-fp) fixture "$name" "$JDK17" -XX:+PreserveFramePointer "${work[@]}" ;;
    jdk17-nofp) fixture "$name" "$JDK17" "${work[@]}" ;;
    jdk25-fp) fixture "$name" "$JDK25" -XX:+PreserveFramePointer "${work[@]}" ;;
    jdk25-nofp) fixture "$name" "$JDK25" "${work[@]}" ;;
    jdk17-xint) fixture "$name" "$JDK17" -Xint "${work[@]}" ;;
    jdk17-deep) SAMPLES=100 fixture "$name" "$JDK17" "${deep[@]}" ;;
    jdk25-deep) SAMPLES=100 fixture "$name" "$JDK25" "${deep[@]}" ;;
    # javac in a loop without the flag: deep, varied stacks through many kinds of frames; its
    # thread's samples only, with the largest stack copy perf gives (the replay cuts it to the
    # recorder's: how often its copy holds the whole stack)
    jdk17-javac) CAPTURE_OPTS="-c compiler- -s 65528" WARMUP=20 SAMPLES=300 fixture "$name" "$JDK17" -Xmx128m CompilerLoop ;;
    jdk25-javac) CAPTURE_OPTS="-c compiler- -s 65528" WARMUP=20 SAMPLES=300 fixture "$name" "$JDK25" -Xmx128m CompilerLoop ;;
    esac
done
