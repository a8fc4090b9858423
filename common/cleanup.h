/* Scope-bound cleanup (bubblewrap/crun style): declare `_cleanup_free_ char *s = ...;` and it is
 * released on every return path; hand ownership on with steal_pointer()/steal_fd(). */
#pragma once
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline void cleanup_freep(void *p)
{
    free(*(void **)p);
}
static inline void cleanup_closep(int *fd)
{
    if (*fd >= 0) {
        int saved = errno; /* close() must not clobber the errno a caller is about to report */
        close(*fd);
        errno = saved;
    }
}
static inline void cleanup_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

#define _cleanup_free_ __attribute__((cleanup(cleanup_freep)))
#define _cleanup_close_ __attribute__((cleanup(cleanup_closep)))
#define _cleanup_fclose_ __attribute__((cleanup(cleanup_fclosep)))

static inline void *steal_pointer_impl(void *pp)
{
    void **p = pp;
    void *v = *p;
    *p = NULL;
    return v;
}
#define steal_pointer(pp) ((__typeof__(*(pp)))steal_pointer_impl(pp))

static inline int steal_fd(int *fd)
{
    int v = *fd;
    *fd = -1;
    return v;
}

#ifndef TEMP_FAILURE_RETRY
#define TEMP_FAILURE_RETRY(expr)                                                                   \
    ({                                                                                             \
        long _r;                                                                                   \
        do                                                                                         \
            _r = (long)(expr);                                                                     \
        while (_r == -1L && errno == EINTR);                                                       \
        _r;                                                                                        \
    })
#endif
