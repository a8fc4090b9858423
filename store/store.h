/* The profile store: windows of folded stacks recorded over time (by the recorder), kept in a
 * SQLite file or a ClickHouse server, read back as one profile for any time range, a timeline of
 * samples per window, or a listing. The format is in docs/STORE.md.
 * Functions return 0 (or a documented positive value) on success, <0 with err set; they print
 * nothing (the caller's main does).
 *
 * The recorder's use of it (one handle per recording thread):
 *   store_open(url)                        once; a ClickHouse URL needs no server yet
 *   for each window, as it ends:           also when nothing ran (stacks: an empty profile),
 *     store_put(s, &w)                     so a gap in the timeline means "not recording"
 *       0  stored
 *       1  kept in the local spool (remote server down or failing): err->msg is a warning to
 *          show once; the spool is sent by a later successful put, oldest first, 256 windows
 *          a put at most, and is bounded (spool_max: the oldest windows go first)
 *      <0  not stored (disk full, damaged file, bad window): err says why; the store is still
 *          whole (a put is one transaction), the next window may be tried
 *   now and then (e.g. hourly):            store_compact(s, now, NULL, ...) keeps it bounded;
 *                                          concurrent writers and readers are fine
 *   on stop:                               store_flush (best effort), store_close
 * Labels: host = the engine's name (docker info Name: several hosts share one ClickHouse),
 * container id and name, image, the JVM's pid inside the container and its version. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "flame/profile.h"

typedef struct store store;

/* The finer cause of a failure, in err->detail (err->code is FLAME_EXIT_STORE, or
 * FLAME_EXIT_USAGE for a bad URL, FLAME_EXIT_EMPTY for a missing store). */
enum store_err {
    STORE_ERR_NONE = 0,
    STORE_ERR_UNREACHABLE, /* server down, refused, timed out */
    STORE_ERR_SERVER,      /* the server answered with an error */
    STORE_ERR_CORRUPT,     /* not a store, or a damaged file */
    STORE_ERR_NEWER,       /* written by a newer docker-flame (schema version above ours) */
    STORE_ERR_IO,          /* disk full, read-only, permission */
    STORE_ERR_URL,         /* unknown scheme, malformed URL */
    STORE_ERR_MISSING,     /* opened for reading: there is no store there (yet) */
    STORE_ERR_OLDER,       /* opened for reading: a store of an older version (not migrated) */
    STORE_ERR_BUSY,        /* SQLite: another process held the store past the busy timeout */
};

/* url: NULL or "" = the default SQLite file, $XDG_DATA_HOME/docker-flame/profiles.db (or
 * ~/.local/share/...); a path or sqlite:///path (created when missing, with its directory);
 * clickhouse://[user[:password]@]host[:port]/db[?spool=PATH|off&spool_max=SIZE&password_file=
 * PATH] (HTTP interface, port 8123 by default, database "default"; windows that cannot be sent
 * are kept in a local spool, see store_put; without a password in the URL, password_file's first
 * line, else $DOCKER_FLAME_STORE_PASSWORD). For writers (the recorder, prune): creates and
 * migrates. Caller closes with store_close. Not thread-safe: one handle a thread. */
int store_open(const char *url, store **out, flame_err *err);
/* The same for reading only (show, ls, diff, completion): nothing is created, migrated or
 * written, not even a pragma; a SQLite file must be a docker-flame store of this version
 * (application id looked at first: a foreign database or an empty file is refused untouched,
 * a missing one is STORE_ERR_MISSING); a ClickHouse database must hold the store's tables. */
int store_open_read(const char *url, store **out, flame_err *err);
void store_close(store *s); /* NULL-safe */
/* A store URL as the user typed it, with every file path in it made absolute against cwd (a
 * path, sqlite://PATH, ClickHouse's spool= and password_file=): what a process that changes
 * directory (record --detach) must open. *out: malloc'd, NULL when url is NULL. -1: no memory. */
int store_url_absolute(const char *url, const char *cwd, char **out);
/* Overwrite the password of a ClickHouse URL in place with "*" (the URL in argv: the kernel
 * shows a process's arguments as they are now, so `ps` no longer shows it). 1 when there was
 * one; the caller keeps a copy made before to open the store with. */
int store_url_scrub(char *url);
/* The file a SQLite store URL names (NULL or "" = the default file), malloc'd; NULL for any
 * other URL. Opens nothing (shell completion looks whether a store exists before opening it:
 * store_open creates a missing one). */
char *store_file_of(const char *url);
/* The store in words, for messages: "/home/u/.local/share/docker-flame/profiles.db",
 * "clickhouse://host:8123/db" (no password). */
const char *store_name(const store *s);

/* One recorded window of one JVM. Strings are labels from the container (hostile: stored as
 * bytes, cut at STORE_MAX_LABEL); stacks may be empty (nothing ran) but not NULL. */
typedef struct store_window {
    const char *host, *container_id, *container_name, *image;
    int64_t jvm_pid;
    const char *jvm_version;
    int64_t start_ms, end_ms; /* unix ms, 0 <= start < end, at most STORE_MAX_WINDOW_MS long */
    int64_t frequency;        /* Hz */
    uint64_t samples;         /* what the recorder counted (may exceed the stacks' sum: lost) */
    const profile *stacks;    /* single-column; counts are rounded to whole samples */
    /* The window's id, set once: 0 = store_put gives it a random one. A window sent again (a
     * spool drained twice, an answer lost after the server stored it) keeps its uid, and the
     * readers count each uid once. */
    uint64_t uid;
    /* What the counts measure (docs/MODES.md): "cpu" (NULL or "" too), "wall", "offcpu",
     * "alloc", "lock"; [a-z] only, at most STORE_MAX_TYPE - 1 bytes. Readers select one. */
    const char *type;
} store_window;
#define STORE_MAX_TYPE 16
#define STORE_MAX_LABEL 256
/* An hour: a reader looks for the windows of [since, until) from since - STORE_MAX_WINDOW_MS on,
 * so this bound is what a short range costs to find (the recorder's windows are seconds to
 * minutes long, compaction's buckets 10 minutes at most). */
#define STORE_MAX_WINDOW_MS (3600LL * 1000)
/* A stack longer than this many bytes is cut at a frame boundary and ends in "[truncated]". */
#define STORE_MAX_STACK (256u << 10)

/* Store one window atomically (all of it or nothing). Returns 0 stored; 1 when it was kept
 * instead, err saying why (for a warning): in the local spool when the ClickHouse server failed
 * (sent by the next successful put or store_flush), or in memory when another process held the
 * SQLite store past the busy timeout (stored with the next put or by store_flush; at most
 * STORE_PENDING_MAX windows, the oldest dropped beyond); <0 error (nothing stored). */
int store_put(store *s, const store_window *w, flame_err *err);
/* Several windows in one transaction / request (the same return values). */
int store_put_many(store *s, const store_window *w, size_t n, flame_err *err);
/* Store what waits: the windows kept in memory (SQLite), the spool (ClickHouse: sent by one
 * process at a time). 0 when nothing waits afterwards. */
int store_flush(store *s, flame_err *err);
/* A copy of w that owns its labels and stacks; free it with store_window_free. 0 or -1 (no
 * memory). */
int store_window_copy(const store_window *w, store_window *out);
void store_window_free(store_window *w);

typedef struct store_query {
    const char *container; /* its name, id, or an id prefix (4+ chars); NULL = every container */
    const char *host;      /* NULL = every host */
    int64_t since_ms, until_ms; /* windows that overlap [since, until) */
    int64_t jvm_pid;            /* 0 = every JVM */
    /* the profile type (store_window.type): NULL = "cpu" for store_profile and store_timeline;
     * for store_list NULL = every type (an entry per type) */
    const char *type;
    /* store_list: the entries only, without the sizes (each entry's share, the disk, the
     * stacks: left 0, sizes_unknown set), which cost a ClickHouse server a read of every
     * window's arrays; a backend whose sizes are cheap may give them anyway */
    bool no_sizes;
    /* store_timeline: > 0 lets the backend return the windows of one series that lie whole in
     * one bucket [k * bucket_ms, (k + 1) * bucket_ms) (UTC multiples), are at most
     * STORE_MERGE_WINDOW_MS long, have one frequency and pause at most STORE_MERGE_PAUSE_MS
     * in all, as one point (store_point.windows); 0: a point per window. The timeline of a day then
     * sends ~1 point per bucket instead of 8,640 a JVM. */
    int64_t bucket_ms;
} store_query;

/* What a query found. The store_* readers ADD into it: zero it before the first call. */
typedef struct store_info {
    uint64_t windows, samples; /* samples: the recorder's counts, summed */
    int64_t first_ms, last_ms; /* start of the first window, end of the last (windows > 0) */
    uint64_t missing; /* samples whose stack text the store lacks (left out; ClickHouse only) */
    int64_t hz_min, hz_max; /* the windows' sampling frequencies (Hz; both 0 when none says) */
} store_info;

/* The windows of q, merged: their stacks ADDED into out (a single-column profile), info updated.
 * Nothing in the range is not an error: info->windows stays as it was. */
int store_profile(store *s, const store_query *q, profile *out, store_info *info, flame_err *err);

/* Samples per window, one series per (host, container, JVM), in time order. */
typedef struct store_point {
    int64_t start_ms, end_ms;
    uint64_t samples;
    int64_t frequency; /* the window's sampling rate (Hz; 0 when it says none) */
    /* a point of several windows (store_query.bucket_ms): how many (0 = one: the window
     * start..end), the ms they cover (their lengths' sum), the last one's length */
    uint32_t windows;
    int64_t covered_ms, last_ms;
} store_point;
/* What store_query.bucket_ms lets a backend merge: windows up to this long (the recorder's;
 * longer ones are compacted buckets, shown as such), with pauses up to this long between them
 * (a longer pause may be a gap in the recording, which the timeline marks). */
#define STORE_MERGE_WINDOW_MS 30000
#define STORE_MERGE_PAUSE_MS 2000
/* A point's windows, covered ms and last window's length, for a point of one window too. */
static inline uint32_t store_point_windows(const store_point *p)
{
    return p->windows ? p->windows : 1;
}
static inline int64_t store_point_covered(const store_point *p)
{
    return p->windows ? p->covered_ms : p->end_ms - p->start_ms;
}
static inline int64_t store_point_last(const store_point *p)
{
    return p->windows ? p->last_ms : p->end_ms - p->start_ms;
}
typedef struct store_series {
    char *host, *container_id, *container_name;
    int64_t jvm_pid;
    store_point *pts;
    size_t n;
} store_series;
typedef struct store_series_list {
    store_series *series;
    size_t n;
} store_series_list;
/* Appends q's series to out (zero it first); free with store_timeline_free. */
int store_timeline(store *s, const store_query *q, store_series_list *out, flame_err *err);
void store_timeline_free(store_series_list *t);

/* What the store holds, one entry per (host, container id, name, image, JVM pid and version):
 * each JVM of a container is a series of its own. */
typedef struct store_entry {
    char *host, *container_id, *container_name, *image;
    int64_t first_ms, last_ms;
    uint64_t windows, samples;
    /* bytes: its share of the store on disk: its windows, and of what they share (the
     * dictionary of stacks, indexes, free pages) in proportion to their bytes; the entries of an
     * unfiltered listing add up to disk_bytes (docs/STORE.md, "Sizes") */
    uint64_t bytes;
    int64_t jvm_pid; /* 0: every JVM of the container (windows of older recorders) */
    char *jvm_version;
    char *type; /* the profile type of these windows ("cpu" in a store older than types) */
} store_entry;
typedef struct store_listing {
    store_entry *e;
    size_t n;
    uint64_t stacks;     /* distinct stacks stored */
    uint64_t disk_bytes; /* the file(s) on disk; ClickHouse: the server's parts of our tables */
    bool sizes_unknown;  /* Distributed tables: the sizes are on the shards */
    uint64_t spooled;    /* windows waiting in the local spool (ClickHouse) */
} store_listing;
/* q: only host/container filter (NULL = everything). Free with store_listing_free. */
int store_list(store *s, const store_query *q, store_listing *out, flame_err *err);
void store_listing_free(store_listing *l);

/* Retention and compaction. Windows that ended more than retain_ms before now are deleted;
 * windows older than each level's age are merged, per JVM, into buckets of that level's size
 * (aligned on the epoch), so the store stays bounded. */
typedef struct store_level {
    int64_t age_ms, bucket_ms;
} store_level;
#define STORE_LEVELS 2
typedef struct store_policy {
    int64_t retain_ms;               /* 0 = keep everything */
    store_level level[STORE_LEVELS]; /* increasing age; bucket_ms 0 = level unused, at most
                                      * STORE_MAX_WINDOW_MS */
} store_policy;
/* 7 days; > 1 h old: 1-minute buckets; > 1 day old: 10-minute buckets. */
#define STORE_RETAIN_DEFAULT_MS (7 * 86400LL * 1000)
void store_policy_default(store_policy *p);
typedef struct store_compact_stats {
    uint64_t deleted; /* windows removed by retention */
    uint64_t merged;  /* windows merged into buckets */
    uint64_t buckets; /* buckets written */
    uint64_t stacks_freed;
    uint64_t disk_before, disk_after;
    uint64_t days_skipped; /* ClickHouse: days not merged, windows arrived while they were */
    uint64_t rollups;      /* hour rollups built (docs/STORE.md, "Hour rollups") */
    uint64_t rollups6;     /* 6-hour rollups built (ClickHouse; docs/STORE.md, "6-hour rollups") */
} store_compact_stats;
/* Retention, then compaction, then disk space given back. stats may be NULL. */
int store_compact(store *s, int64_t now_ms, const store_policy *pol, store_compact_stats *stats,
                  flame_err *err);
/* Retention only. */
int store_prune(store *s, int64_t now_ms, int64_t retain_ms, store_compact_stats *stats,
                flame_err *err);
