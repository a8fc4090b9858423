/* The local spool of a remote store (store/spool.c): where a put the server did not take goes,
 * and what later puts and store_flush send. Called by the front (store.c) only. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "store/store.h"

/* Does s have a spool (a path, not spool=off)? */
bool spool_on(const store *s);
/* Keep windows w[0..n) a failed put could not store (err: why it failed; it becomes the warning
 * of return value 1). 1 kept; <0 the spool failed too. */
int spool_keep(store *s, const store_window *w, size_t n, flame_err *err);
/* Send up to rounds batches of the oldest spooled windows through s, unless another process
 * sends the spool right now (its drain lock, <spool>.lock). 0 sent (or nothing to send, or
 * another sends it), -1 stopped (err says why; what was not sent stays). */
int spool_drain(store *s, int rounds, flame_err *err);
/* Send everything the spool holds, waiting up to a minute for another process that sends it:
 * 0 when it is empty afterwards. */
int spool_flush(store *s, flame_err *err);
/* How many windows wait (0 when there is no spool file). */
int spool_waiting(store *s, uint64_t *n, flame_err *err);
