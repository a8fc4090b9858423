/* The registry of background recordings (`docker flame record --detach`), read by `docker flame
 * ps` and `stop`: one entry per recorded container in $XDG_STATE_HOME/docker-flame/recordings
 * (default ~/.local/state/...): `<id>.lock`, locked (fcntl write lock) by the recorder for its
 * whole life, and `<id>.json`, its state, rewritten atomically after every window. The lock is
 * the truth about liveness: F_GETLK names the pid holding it, so `stop` signals the recorder
 * itself, never a process that merely reused a pid written in a file. docs/RECORD.md. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

typedef struct rec_entry {
    char id[17]; /* 16 hex digits */
    long pid;    /* the recorder's pid (the lock holder); 0 = not running any more; -1 = running in
                  * a PID namespace this process cannot see (its pid unknown here) */
    char arg[256];  /* the container as the user named it */
    char name[256]; /* its name as the engine reports it (empty until known) */
    char container_id[65];
    char state[32]; /* starting, recording, waiting, engine-down */
    char store[1024];
    char endpoint[512]; /* the engine it records from */
    char log[1024];     /* where its messages go */
    char reason[256];   /* once ended: why */
    int exit_code;      /* once ended: the recorder's exit code */
    int64_t since_ms, last_window_ms;
    uint64_t windows, samples, window_ms, frequency;
} rec_entry;

typedef struct rec_reg {
    int lock_fd; /* -1 when not registered */
    char dir[900];
    rec_entry e;
} rec_reg;

/* The registry's directory (made 0700 when create); err set when there is no HOME to put it. */
int recs_dir(char *buf, size_t cap, bool create, flame_err *err);
/* A new entry: a fresh id, the lock taken, the state written. r->e holds what to write; its id
 * and pid are filled in. */
int recs_register(rec_reg *r, flame_err *err);
/* Rewrite the state (atomically: a reader sees the old or the new one, never half). */
int recs_update(rec_reg *r, flame_err *err);
/* Remove the entry (state first, then the lock file), release the lock. Safe when unregistered. */
void recs_unregister(rec_reg *r);
/* The recorder ends: its last state stays for `stop` and `ps` to read once (they remove it);
 * the lock file goes, the lock is released. */
void recs_finish(rec_reg *r);
/* Every entry, sorted by since_ms. Never call it from a process that holds a registry lock: a
 * process does not see its own POSIX lock, and closing the lock file drops it. An entry whose
 * recorder is gone (ended, or killed: its lock is free) has pid 0; with reap, its files (state,
 * lock, log) are removed after it was read: only the caller that shows it to the user reaps.
 * An entry whose lock cannot be examined is skipped. *out is freed by the caller. */
int recs_list(rec_entry **out, size_t *n, bool reap, flame_err *err);
/* The end of recording id's log (at most cap - 1 bytes, NUL-terminated), from <dir>/<id>.log
 * (never a path read from a file), when that is a regular file: no symlink is followed, no FIFO
 * waited on. Returns the bytes read (0: none). */
size_t recs_log_tail(const char *id, char *buf, size_t cap);
/* Remove an ended entry's files (state, lock, log). */
void recs_forget(const char *id);
/* Does `what` name this entry: its recording id, the container as typed, its name, or a prefix
 * (at least 4 hex digits) of its container id? */
bool recs_match(const rec_entry *e, const char *what);
