/* The agent's alloc and lock samples (docs/MODES.md), read from the copy the sidecar fetched
 * (raw-<pid>.modes in the work directory) after every privilege is gone, checked line by line
 * as the target's data they are, and sent as M lines. The agent's line:
 *   "A <objects> <bytes> thread;frame;...;class_[a]"   "L <contentions> <ns> ...;class_[l]"
 * A line that breaks a rule is dropped (and counted), never repaired into something else. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "sidecar/session.h"
#include "sidecar/sidecar.h"

static int take_u64(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    int digits = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++) {
        if (++digits > 16) /* <= 2^53 is all a count or a sum of ns may be */
            return -1;
        v = v * 10 + (uint64_t)(**p - '0');
    }
    if (!digits || v > (1ull << 53))
        return -1;
    *out = v;
    return 0;
}

int sc_modes_parse(char *line, size_t n, unsigned modes, sc_modes_rec *r)
{
    if (n < 4 || line[1] != ' ')
        return -1;
    if (line[0] == 'A')
        r->mode = CT_MODE_ALLOC;
    else if (line[0] == 'L')
        r->mode = CT_MODE_LOCK;
    else
        return -1;
    if (!(modes & CT_MODE_BIT(r->mode)))
        return -1;
    const char *p = line + 2, *end = line + n;
    if (take_u64(&p, end, &r->count0) < 0 || p >= end || *p++ != ' ' ||
        take_u64(&p, end, &r->value) < 0 || p >= end || *p++ != ' ' || r->value == 0)
        return -1;
    r->stack = line + (p - line);
    r->len = (size_t)(end - p);
    if (r->len == 0 || r->len > SC_MODES_STACK_MAX)
        return -1;
    r->frames = 1;
    char *s = line + (p - line);
    for (size_t i = 0; i < r->len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == ';') {
            if (i == 0 || i + 1 == r->len || s[i + 1] == ';')
                return -1; /* an empty frame */
            if (++r->frames > SC_MODES_FRAMES_MAX)
                return -1;
        } else if (c < 0x20 || c == 0x7f) {
            s[i] = '?';
        }
    }
    return 0;
}

/* One JVM's file: its lines, checked, as M lines. max_stack keeps the thread and the leaf's N
 * frames (as --max-stack keeps a CPU sample's leaf side); root: the JVM's frame when several. */
static void emit_file(const sc_session *s, int k, int from, unsigned modes,
                      unsigned long long *dropped, unsigned long long *lines)
{
    int fd = dup(from);
    if (fd < 0 || lseek(fd, 0, SEEK_SET) < 0) {
        if (fd >= 0)
            close(fd);
        return;
    }
    _cleanup_fclose_ FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return;
    }
    _cleanup_free_ char *line = NULL, *out = NULL;
    size_t cap = 0;
    const char *root = s->n > 1 ? s->jvms[k].root_frame : NULL;
    size_t rl = root ? strlen(root) : 0;
    out = malloc(SC_MODES_STACK_MAX + sizeof s->jvms[k].root_frame + 2);
    if (!out)
        return;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) >= 0) {
        if (++*lines > SC_MODES_LINES_MAX)
            break;
        if (n && line[n - 1] == '\n')
            n--;
        if (n > 0 && line[0] == '#')
            continue; /* the agent's own counts */
        sc_modes_rec r;
        if (sc_modes_parse(line, (size_t)n, modes, &r) < 0) {
            ++*dropped;
            continue;
        }
        const char *st = r.stack;
        size_t len = r.len, o = 0;
        if (root) {
            memcpy(out, root, rl);
            out[rl] = ';';
            o = rl + 1;
        }
        const char *first = memchr(st, ';', len); /* end of the thread's frame */
        if (s->o.max_stack > 0 && first && r.frames - 1 > (size_t)s->o.max_stack) {
            size_t keep = (size_t)s->o.max_stack, seen = 0;
            const char *cut = st + len;
            while (cut > first && seen < keep)
                if (*--cut == ';')
                    seen++;
            size_t tl = (size_t)(first - st);
            memcpy(out + o, st, tl);
            o += tl;
            memcpy(out + o, cut, (size_t)(st + len - cut));
            o += (size_t)(st + len - cut);
        } else {
            memcpy(out + o, st, len);
            o += len;
        }
        sc_out_mode(r.mode, r.count0, out, o, r.value);
    }
}

static void emit_one(const sc_session *s, int k, int fd, unsigned modes)
{
    unsigned long long dropped = 0, lines = 0;
    emit_file(s, k, fd, modes, &dropped, &lines);
    if (dropped)
        sc_warn("pid %d: %llu malformed alloc/lock lines dropped", (int)s->jvms[k].st.pid, dropped);
    if (lines > SC_MODES_LINES_MAX)
        sc_warn("pid %d: alloc/lock samples cut at %d lines", (int)s->jvms[k].st.pid,
                SC_MODES_LINES_MAX);
}

void sc_emit_modes_fd(const sc_session *s, int k, int fd)
{
    emit_one(s, k, fd, ct_modes_of(&s->o) & SC_AGENT_MODES);
}

void sc_emit_modes(sc_session *s)
{
    unsigned modes = ct_modes_of(&s->o) & SC_AGENT_MODES;
    if (!modes)
        return;
    for (int k = 0; k < s->n; k++) {
        if (s->modes_fd[k] < 0 && (s->jvms[k].refused & modes) == modes)
            continue; /* said in its J line (refused): the plugin says it */
        if (s->modes_fd[k] < 0) {
            sc_warn("pid %d: no allocation or lock samples: the agent did not run in this JVM%s%s",
                    (int)s->jvms[k].st.pid, s->jvms[k].reason[0] ? " (" : "",
                    s->jvms[k].reason[0] ? s->jvms[k].reason : "");
            continue;
        }
        emit_one(s, k, s->modes_fd[k], modes);
    }
}
