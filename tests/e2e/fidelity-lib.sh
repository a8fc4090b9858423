# The fidelity check's arithmetic, shared by fidelity-jfr.t and bench/fidelity.sh:
# fold docker flame's folded stacks and JFR's jdk.ExecutionSample events to the same thing -- the
# self time of each Java method -- and compare two such distributions.
#
# Like with like: JFR's ExecutionSample covers threads running Java code, attributed to their top
# Java frame (a thread in VM or native code called from Java is not sampled, or is attributed to
# that Java frame); so our side keeps only stacks with a Java frame and credits the deepest one.
# Native-method samples (jdk.NativeMethodSample) are not compared: the fixtures' hot paths are
# pure Java. Method names: JFR's "pkg.Class.method(params) line: N" -> pkg.Class.method; ours
# lose their annotation (_[int] _[j] _[i]).

# flame_self FOLDED -> "method<TAB>samples" lines
flame_self() {
    awk '{
        n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
        k = split(s, f, ";"); m = ""
        for (i = k; i >= 1; i--) {
            x = f[i]; sub(/_\[(int|j|i)\]$/, "", x)
            if (x ~ /^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$<][A-Za-z0-9_$<>]*)+$/ && x !~ /::/) { m = x; break }
        }
        if (m != "") c[m] += n
    } END { for (m in c) printf "%s\t%d\n", m, c[m] }' "$1"
}

# jfr_self JFR_PRINT_TEXT T0 T1 [PART] -> "method<TAB>samples" lines for the events whose
# startTime (HH:MM:SS.mmm, UTC) lies in [T0, T1) (epoch seconds); PART 1 or 2: that half only.
jfr_self() {
    local t0=$1 t1=$3 part=${4:-0}
    t0=$2 t1=$3
    awk -v t0="$t0" -v t1="$t1" -v part="$part" '
    function sod(e) { return e - 86400 * int(e / 86400) }
    BEGIN { a = sod(t0); b = a + (t1 - t0); mid = (a + b) / 2 }
    /startTime = / { split($3, hms, ":"); t = hms[1] * 3600 + hms[2] * 60 + hms[3]; if (t < a - 43200) t += 86400; top = ""; want = 0 }
    /stackTrace = \[/ { want = 1; next }
    want == 1 { x = $1; sub(/\(.*/, "", x); top = x; want = 2
        if (t >= a && t < b && (part == 0 || (part == 1 && t < mid) || (part == 2 && t >= mid))) c[top]++ }
    END { for (m in c) printf "%s\t%d\n", m, c[m] }' "$1"
}

# tvd A B -> total variation distance (0..1) between two "method<TAB>count" distributions
tvd() {
    awk -F'\t' 'FNR == NR { a[$1] = $2; ta += $2; next } { b[$1] = $2; tb += $2 }
    END {
        if (!ta || !tb) { print 1; exit }
        for (m in a) k[m] = 1; for (m in b) k[m] = 1
        for (m in k) { d = a[m] / ta - b[m] / tb; s += d < 0 ? -d : d }
        printf "%.3f\n", s / 2
    }' "$1" "$2"
}

# top1 A -> the method with the most samples
top1() { sort -t"$(printf '\t')" -k2,2nr "$1" | head -1 | cut -f1; }
# total A -> samples
total() { awk -F'\t' '{ t += $2 } END { print t + 0 }' "$1"; }
# top10_overlap A B -> how many of A's 10 most sampled methods are among B's 10
top10_overlap() {
    local t
    t=$(printf '\t')
    comm -12 <(sort -t"$t" -k2,2nr "$1" | head -10 | cut -f1 | sort) <(sort -t"$t" -k2,2nr "$2" | head -10 | cut -f1 | sort) | wc -l
}

# Inclusive time (whole stacks): the share of samples whose stack holds a Java method
# anywhere, each method counted once per stack. Ours keep the stacks with a Java frame, JFR's
# events need their whole stacks (`jfr print --stack-depth 64`; the fixtures' stacks are ~10
# frames). A stack the frame-pointer chain cut short credits its callers nothing.

# flame_incl FOLDED -> "method<TAB>samples" lines (each method once per stack) and a last line
# "<TAB>total": the stacks with a Java frame
flame_incl() {
    awk '{
        n = $NF; s = $0; sub(/ [0-9]+$/, "", s)
        k = split(s, f, ";"); delete seen; any = 0
        for (i = 1; i <= k; i++) {
            x = f[i]; sub(/_\[(int|j|i)\]$/, "", x)
            if (x ~ /^[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$<][A-Za-z0-9_$<>]*)+$/ && x !~ /::/) {
                any = 1
                if (!(x in seen)) { seen[x] = 1; c[x] += n }
            }
        }
        if (any) t += n
    } END { for (m in c) printf "%s\t%d\n", m, c[m]; printf "\t%d\n", t }' "$1"
}

# jfr_incl JFR_PRINT_TEXT T0 T1 [PART] -> the same from jdk.ExecutionSample events printed with
# --stack-depth 64, those whose startTime lies in [T0, T1) (PART 1 or 2: that half only)
jfr_incl() {
    local part=${4:-0}
    awk -v t0="$2" -v t1="$3" -v part="$part" '
    function sod(e) { return e - 86400 * int(e / 86400) }
    function done() { if (keep) { t++; for (m in seen) c[m]++ } keep = 0; delete seen }
    BEGIN { a = sod(t0); b = a + (t1 - t0); mid = (a + b) / 2 }
    /startTime = / { done(); split($3, hms, ":"); tt = hms[1] * 3600 + hms[2] * 60 + hms[3]; if (tt < a - 43200) tt += 86400; inst = 0 }
    /stackTrace = \[/ { inst = 1; keep = tt >= a && tt < b && (part == 0 || (part == 1 && tt < mid) || (part == 2 && tt >= mid)); next }
    inst && /^[ \t]*\]/ { inst = 0; next }
    inst && /\(/ { x = $1; sub(/\(.*/, "", x); seen[x] = 1 }
    END { done(); for (m in c) printf "%s\t%d\n", m, c[m]; printf "\t%d\n", t }' "$1"
}

# incl_diff A B [N] -> "mean max": over the N (default 20) methods with the largest inclusive
# share in B, the mean and the largest |share in A - share in B| (shares of each side's total)
incl_diff() {
    awk -F'\t' -v n="${3:-20}" '
    FNR == NR { if ($1 == "") ta = $2; else a[$1] = $2; next }
    { if ($1 == "") tb = $2; else b[$1] = $2 }
    END {
        if (!ta || !tb) { print "1 1"; exit }
        k = 0; for (m in b) order[++k] = m
        for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (b[order[j]] > b[order[i]]) { x = order[i]; order[i] = order[j]; order[j] = x }
        lim = k < n ? k : n; s = 0; mx = 0
        for (i = 1; i <= lim; i++) { m = order[i]; d = a[m] / ta - b[m] / tb; if (d < 0) d = -d; s += d; if (d > mx) mx = d }
        printf "%.3f %.3f\n", lim ? s / lim : 1, mx
    }' "$1" "$2"
}

