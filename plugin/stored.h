/* What the verbs that read the profile store share (show, ls, prune, and the stored inputs of
 * diff and merge): which store (--store, else $DOCKER_FLAME_STORE, else the default file), the
 * --since/--until range, the "nothing stored" error that says what IS stored, the choice of one
 * JVM of a container (CONTAINER:PID), and a stored range CONTAINER[:PID]@SINCE..UNTIL loaded as
 * one profile. */
#pragma once
#include <stdint.h>

#include "common/args.h"
#include "common/err.h"
#include "flame/profile.h"
#include "plugin/graph.h"
#include "plugin/out/output.h"
#include "store/store.h"

/* `docker flame record`'s default rate (plugin/cmd_record.c), what `show` assumes when it needs
 * one (pprof's cpu time). */
#define REC_DEFAULT_HZ 49

/* --store URL, as an entry of a verb's option table; offset: its const char * field. */
#define STORED_STORE_SPEC(offset)                                                                  \
    {                                                                                              \
        .lng = "store", .kind = ARG_STR, .off = (offset), .meta = "URL",                           \
        .help =                                                                                    \
            "the profile store: a file, sqlite:///path or\nclickhouse://host:8123/db (default: "   \
            "$DOCKER_FLAME_STORE,\nelse ~/.local/share/docker-flame/profiles.db)",                 \
        .complete = "file"                                                                         \
    }
/* --host H: the label of the machine that recorded (several write into one ClickHouse) */
#define STORED_HOST_SPEC(offset)                                                                   \
    {                                                                                              \
        .lng = "host", .kind = ARG_STR, .off = (offset), .meta = "HOST",                           \
        .help = "only windows recorded on this host (a fleet writing into\none store)"             \
    }

/* Wall-clock now, unix ms. */
int64_t stored_now_ms(void);
/* Open the store: url (--store), else $DOCKER_FLAME_STORE, else the default file; to write
 * (record, prune: created or migrated when needed) or only to read (show, ls, stored inputs:
 * nothing is written). */
int stored_open(const char *url, store **s, flame_err *err);
int stored_open_read(const char *url, store **s, flame_err *err);
/* --store URL as parsed from argv: when it holds a password, *url becomes a copy and the
 * password in argv is overwritten, so `ps` and /proc/PID/cmdline of this process (and of the
 * recorders it forks) no longer show it. Call right after parsing. */
int stored_hide_password(const char **url, flame_err *err);
/* --since / --until (NULL = default_since_ago before now / now) into a range; usage errors
 * name the option. */
int stored_range(const char *since, const char *until, int64_t now, int64_t default_since_ago,
                 int64_t *since_ms, int64_t *until_ms, flame_err *err);
/* 1536 -> "1.5 KiB" */
void stored_size_text(uint64_t bytes, char *buf, size_t cap);
/* "2026-11-24 14:03:00 to 14:07:00" (the date repeated only when it differs). */
void stored_range_text(int64_t since_ms, int64_t until_ms, char *buf, size_t cap);
/* "CONTAINER" or "CONTAINER:PID" (one JVM of it: its pid in the container; a container name
 * never holds a ':') into name (cap bytes) and *pid (0 = every JVM of it). 0, or -1 with a usage
 * error that says the form. */
#define STORED_JVM_FORM "CONTAINER:PID (web:7: the JVM of pid 7 in web)"
int stored_select(const char *arg, char *name, size_t cap, int64_t *pid, flame_err *err);

/* Fill err with FLAME_EXIT_EMPTY: nothing of q's container in q's range, and what the store
 * does hold for it ("web is stored from ... to ...") or that it holds nothing of it. */
int stored_nothing(store *s, const store_query *q, flame_err *err);
/* flame_profiler.stored (plugin/cmd.h): arg "CONTAINER[:PID]@SINCE..UNTIL" from the store of
 * $DOCKER_FLAME_STORE (or the default): every JVM of the container merged, or the one of that
 * pid; the windows of profile type `type` (NULL = cpu). 1 loaded into *out, 0 not a stored input,
 * <0 error. */
int stored_input(void *ctx, const char *arg, const char *type, profile **out, flame_err *err);

/* A stored range as `show` writes it, in one place for show's files and serve's exports (the
 * same bytes): the title "LABEL, RANGE" (unless g gives one), the subtitle "N windows, M
 * samples", pprof's period and times from info. LABEL: the containers joined by '+', or "all
 * containers". A q->type other than cpu says its unit as a profile of that mode does
 * (docs/MODES.md): "LABEL - wall clock (ns), RANGE", tooltips in ns, the SVG's type mark, pprof's
 * value type (wall/nanoseconds). */
typedef struct stored_job {
    out_job job; /* ready for out_write / out_write_to; points into this struct */
    render_opts ro;
    pprof_meta pm;
    char label[160], range[96], sub[160], title[300];
} stored_job;
void stored_job_init(stored_job *j, const profile *p, int fmt, const char *const *containers, int n,
                     const store_query *q, const store_info *info, const graph_opts *g);
/* The name show gives its output: <prefix>-<containers, or "all">-<since as
 * YYYYmmdd-HHMMSS><ext>, the containers made safe for a file name (malloc'd; NULL: no memory). */
char *stored_file_name(const char *prefix, const char *const *containers, int n, int64_t since_ms,
                       const char *ext);
