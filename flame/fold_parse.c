/* perf script's lines as stackcollapse-perf.pl reads them: its header, event and frame regexes
 * emulated by hand with their exact backtracking outcome, plus our timestamp-anchored header
 * (docs/FOLDING.md). Every scan is linear in the line: no backtracking engine, so a hostile
 * line cannot make folding quadratic. */
#include "flame/fold_parse.h"

#include <stdlib.h>
#include <string.h>

/* Perl's \s \d \w and hex classes, and the bytes fold_tidy_piece() rewrites. */
const unsigned char fold_cls[256] = {
    [0 ... 8] = C_SPECIAL,
    ['\t' ... '\r'] = C_SPACE | C_SPECIAL, /* \t \n \v \f \r */
    [14 ... 0x1f] = C_SPECIAL,
    [' '] = C_SPACE,
    ['0' ... '9'] = C_DIGIT | C_WORD | C_HEX | C_XLOWER,
    ['a' ... 'f'] = C_WORD | C_HEX | C_XLOWER,
    ['g' ... 'z'] = C_WORD,
    ['A' ... 'F'] = C_WORD | C_HEX,
    ['G' ... 'Z'] = C_WORD,
    ['_'] = C_WORD,
    [';'] = C_SPECIAL,
    ['"'] = C_SPECIAL,
    ['\''] = C_SPECIAL,
    [0x7f] = C_SPECIAL,
};

/* ---- headers ---- */

/* Perl: m{^(\S.+?)\s+(\d+)/STAR(\d+)STAR\s+} (STAR: Kleene star), with the comm's minimum length as
 * a parameter (2 in Perl: \S plus at least one more byte; 1 in our dialect). The comm is the
 * shortest prefix followed by whitespace, digits, optional slashes, optional digits, whitespace.
 * Only the first byte of each whitespace run can start the match (a later byte of the same run
 * would give the same verdict), which keeps this linear. */
bool fold_header_perl(const char *s, size_t n, size_t min_comm, header *h)
{
    if (n == 0 || pl_space((unsigned char)s[0]))
        return false;
    for (size_t e = min_comm; e < n; e++) {
        if (!pl_space((unsigned char)s[e]))
            continue;
        if (e > min_comm && pl_space((unsigned char)s[e - 1]))
            continue;
        size_t w = run_fwd(s, e, n, C_SPACE);
        size_t d = run_fwd(s, w, n, C_DIGIT);
        if (d == w)
            continue;
        size_t sl = d;
        while (sl < n && s[sl] == '/')
            sl++;
        size_t t = run_fwd(s, sl, n, C_DIGIT);
        if (t >= n || !pl_space((unsigned char)s[t]))
            continue;
        h->comm = (span){s, e};
        h->pid = (span){s + w, d - w};
        h->tid = t > sl ? (span){s + sl, t - sl} : (span){NULL, 0};
        return true;
    }
    return false;
}

/* Perl: /:\s*(\d+)*\s+(\S+):\s*$/ on the whole header. The event is the last blank-separated
 * token minus its final ':'; before it: ':' then blanks, an optional number (the period), and
 * at least one blank. */
void fold_event_perl(const char *s, size_t n, header *h)
{
    h->event = h->period = (span){NULL, 0};
    size_t e = run_back(s, n, C_SPACE);
    if (e < 2 || s[e - 1] != ':')
        return;
    size_t t = e - 1;
    while (t > 0 && !pl_space((unsigned char)s[t - 1]))
        t--;
    if (t == e - 1 || t == 0)
        return;
    size_t w = run_back(s, t, C_SPACE);
    size_t d = run_back(s, w, C_DIGIT);
    size_t x = d;
    if (d < w) /* a number: blanks may sit between ':' and it */
        x = run_back(s, x, C_SPACE);
    if (x == 0 || s[x - 1] != ':')
        return;
    h->event = (span){s + t, e - 1 - t};
    if (d < w)
        h->period = (span){s + d, w - d};
}

bool fold_all_digits(const char *p, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!pl_digit((unsigned char)p[i]))
            return false;
    return true;
}

/* "123" or "123/456" */
static bool pid_token(const char *p, size_t n, span *pid, span *tid)
{
    const char *slash = memchr(p, '/', n);
    if (!slash) {
        if (!fold_all_digits(p, n))
            return false;
        *pid = (span){p, n};
        *tid = (span){NULL, 0};
        return true;
    }
    size_t a = (size_t)(slash - p);
    if (!fold_all_digits(p, a) || !fold_all_digits(slash + 1, n - a - 1))
        return false;
    *pid = (span){p, a};
    *tid = (span){slash + 1, n - a - 1};
    return true;
}

/* Our header parser: anchored on the timestamp token "<digits>.<digits>:", which perf prints
 * by default. Before it: the pid (or pid/tid) token, optionally a "[cpu]" token, and a comm of
 * any length, leading blanks allowed. After it: an optional period and "event:". */
bool fold_header_ours(const char *s, size_t n, header *h)
{
    span tok[3] = {{0}}; /* the three tokens before the current one, tok[2] nearest */
    size_t ntok = 0, first = n;
    size_t i = 0;
    while (i < n) {
        i = run_fwd(s, i, n, C_SPACE);
        if (i >= n)
            break;
        size_t b = i;
        i = run_to(s, i, n, C_SPACE);
        span cur = {s + b, i - b};
        if (first == n)
            first = b;
        const char *dot = cur.len >= 4 ? memchr(cur.p, '.', cur.len) : NULL;
        if (dot && cur.p[cur.len - 1] == ':' && fold_all_digits(cur.p, (size_t)(dot - cur.p)) &&
            fold_all_digits(dot + 1, (size_t)(cur.p + cur.len - 1 - dot - 1))) {
            /* a timestamp: which token is the pid? */
            int pid_at = -1;
            if (ntok >= 2 && pid_token(tok[2].p, tok[2].len, &h->pid, &h->tid))
                pid_at = 2;
            else if (ntok >= 3 && tok[2].len >= 3 && tok[2].p[0] == '[' &&
                     tok[2].p[tok[2].len - 1] == ']' &&
                     fold_all_digits(tok[2].p + 1, tok[2].len - 2) &&
                     pid_token(tok[1].p, tok[1].len, &h->pid, &h->tid))
                pid_at = 1;
            if (pid_at >= 0) {
                h->time = (span){cur.p, cur.len - 1};
                h->cpu = pid_at == 1 ? (span){tok[2].p + 1, tok[2].len - 2} : (span){NULL, 0};
                const char *comm_end = tok[pid_at - 1].p + tok[pid_at - 1].len;
                h->comm = (span){s + first, (size_t)(comm_end - (s + first))};
                if (!h->tid.p) { /* perf's default prints the tid only */
                    h->tid = h->pid;
                    h->pid = (span){NULL, 0};
                }
                goto after_time;
            }
        }
        tok[0] = tok[1];
        tok[1] = tok[2];
        tok[2] = cur;
        ntok++;
    }
    return false;

after_time:
    h->event = h->period = h->rest = (span){NULL, 0};
    for (int k = 0; k < 2; k++) {
        i = run_fwd(s, i, n, C_SPACE);
        size_t b = i;
        i = run_to(s, i, n, C_SPACE);
        if (i == b)
            return true;
        if (k == 0 && fold_all_digits(s + b, i - b)) {
            h->period = (span){s + b, i - b};
            continue;
        }
        if (i - b >= 2 && s[i - 1] == ':') {
            h->event = (span){s + b, i - b - 1};
            i = run_fwd(s, i, n, C_SPACE);
            if (i < n)
                h->rest = (span){s + i, n - i};
        }
        return true;
    }
    return true;
}

/* ---- frame lines ---- */

/* Perl: /^\s*(\w+)\s*(.+) \((.*)\)/, unanchored at the end. The module is between the last
 * " (" that has a ')' after it and the last ')'; the pc is the word run after leading blanks,
 * shortened only when the symbol would otherwise be empty. */
bool fold_parse_frame(const char *s, size_t n, frame_line *fl)
{
    size_t a = run_fwd(s, 0, n, C_SPACE);
    size_t b = run_fwd(s, a, n, C_WORD);
    if (b == a)
        return false;
    size_t c = run_fwd(s, b, n, C_SPACE);
    const char *rp = memrchr(s, ')', n);
    if (!rp)
        return false;
    size_t r = (size_t)(rp - s);
    if (r < 2)
        return false;
    size_t q = r - 1; /* the " (" must end before the ')' */
    while (q-- > 0)
        if (s[q] == ' ' && s[q + 1] == '(')
            break;
    if (q == (size_t)-1)
        return false;
    size_t start, pc_end = b;
    if (q >= c + 1)
        start = c;
    else if (c > b && q >= b + 1)
        start = q - 1;
    else if (q >= a + 2 && q <= b) {
        start = q - 1;
        pc_end = q - 1;
    } else
        return false;
    fl->pc = (span){s + a, pc_end - a};
    fl->func = (span){s + start, q - start};
    fl->mod = (span){s + q + 2, r - (q + 2)};
    return true;
}

/* perf's JIT map of process N, as perf names it: ".../perf-<N>.map". */
bool fold_mod_is_perfmap(span mod)
{
    const char *slash = memrchr(mod.p, '/', mod.len);
    const char *base = slash ? slash + 1 : mod.p;
    size_t bl = (size_t)(mod.p + mod.len - base);
    if (bl < 10 || memcmp(base, "perf-", 5) != 0 || memcmp(base + bl - 4, ".map", 4) != 0)
        return false;
    return fold_all_digits(base + 5, bl - 9);
}

/* Perl: m:/tmp/perf-\d+\.map: anywhere in the module. */
bool fold_mod_is_perfmap_perl(span mod)
{
    const char *p = mod.p, *end = mod.p + mod.len;
    while ((p = find_bytes(p, (size_t)(end - p), "/tmp/perf-", 10))) {
        const char *d = p + 10;
        while (d < end && pl_digit((unsigned char)*d))
            d++;
        if (d > p + 10 && end - d >= 4 && memcmp(d, ".map", 4) == 0)
            return true;
        p++;
    }
    return false;
}

/* Perl: m/(^\[|vmlinux$)/ && !/unknown/ */
bool fold_mod_is_kernel(span mod)
{
    bool k = (mod.len > 0 && mod.p[0] == '[') ||
             (mod.len >= 7 && memcmp(mod.p + mod.len - 7, "vmlinux", 7) == 0);
    return k && !find_bytes(mod.p, mod.len, "unknown", 7);
}

const char *fold_find_arrow(const char *p, const char *end)
{
    while (p < end && (p = memchr(p, '-', (size_t)(end - p)))) {
        if (p + 1 < end && p[1] == '>')
            return p;
        p++;
    }
    return NULL;
}
