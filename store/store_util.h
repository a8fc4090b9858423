/* What every part of the profile store shares (store/store_util.c): a leaf that calls nothing
 * else of store/. Only store/ and its tests include this (through store_impl.h). */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

/* Fail with FLAME_EXIT_STORE and a detail (enum store_err; FLAME_EXIT_USAGE for STORE_ERR_URL). */
int store_fail(flame_err *err, int detail, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Checks of a window before it is stored (both backends refuse the same things). */
int store_check_window(const store_window *w, flame_err *err);
/* A window's profile type as stored: "cpu" for NULL or "". */
const char *store_type_of(const char *type);
/* A window's uid: random, never 0. */
uint64_t store_uid(void);
/* A container id prefix matches from this many characters on (docker's short ids are 12). */
#define STORE_ID_PREFIX_MIN 4

/* $XDG_DATA_HOME/docker-flame/<file>, or ~/.local/share/docker-flame/<file>. Caller frees. */
char *store_data_path(const char *file, flame_err *err);
/* mkdir -p of path's directory (mode 0700). */
int store_make_parent(const char *path, flame_err *err);
/* The default spool of a remote store, named after tag (host, port, database): a file in the
 * data directory. Caller frees. */
char *store_spool_default(const char *tag, flame_err *err);
/* Close a handle (its backend, its spool's) and free it; NULL-safe. */
void store_handle_free(store *s);

/* A label as stored: at most STORE_MAX_LABEL - 1 bytes (cut on a UTF-8 boundary), NULL = "". */
void store_label_copy(char *out, const char *in);
/* Stack text as stored: s itself when short enough (returns len), else the longest prefix that
 * ends at a frame boundary below STORE_MAX_STACK, followed by ";[truncated]" in buf (which has
 * STORE_MAX_STACK bytes); *out points to the text to store. */
size_t store_stack_bound(const char *s, size_t len, char *buf, const char **out);

/* Append a point to t: to the last series when it is the same (host, container id, JVM), else
 * to a new one. 0 or -1 (out of memory). */
int store_timeline_add(store_series_list *t, const char *host, const char *container_id,
                       const char *container_name, int64_t jvm_pid, const store_point *pt);
/* A number in SQL text. */
#define STORE_STR_(x) #x
#define STORE_STR(x) STORE_STR_(x)

/* The store's bytes on disk shared out in proportion to weights (ls's SIZE): each share is the
 * difference of two rounded running sums, so the shares of all the weights add up to disk to
 * the byte, in whatever order they are taken. Zero it but for total (the sum of all weights)
 * and disk. */
typedef struct store_share {
    uint64_t total, disk, sum;
} store_share;
uint64_t store_share_of(store_share *s, uint64_t weight);

/* Append an entry (strings copied). */
int store_listing_add(store_listing *l, const store_entry *e);
/* Add windows (spanning start_ms to end_ms) to info. */
void store_info_add(store_info *info, uint64_t windows, uint64_t samples, int64_t hz_min,
                    int64_t hz_max, int64_t start_ms, int64_t end_ms);
