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

/* The libraries' own types, for the modules that use them (plugin: jansson, libcurl; sidecar:
 * libcap, libseccomp). Each block exists only when that library's header was included first
 * (its include guard is tested), so pure modules pull in no library at all. */
#ifdef JANSSON_H
static inline void cleanup_json_decrefp(json_t **j)
{
    json_decref(*j); /* NULL-safe */
}
#define _cleanup_json_ __attribute__((cleanup(cleanup_json_decrefp)))
#endif
#ifdef CURLINC_CURL_H
static inline void cleanup_curlp(CURL **c)
{
    if (*c)
        curl_easy_cleanup(*c);
}
static inline void cleanup_curl_slistp(struct curl_slist **l)
{
    curl_slist_free_all(*l); /* NULL-safe */
}
#define _cleanup_curl_ __attribute__((cleanup(cleanup_curlp)))
#define _cleanup_curl_slist_ __attribute__((cleanup(cleanup_curl_slistp)))
#endif
#ifdef _SYS_CAPABILITY_H
static inline void cleanup_capp(cap_t *c)
{
    if (*c)
        cap_free(*c);
}
#define _cleanup_cap_ __attribute__((cleanup(cleanup_capp)))
#endif
#ifdef _SECCOMP_H
static inline void cleanup_seccompp(scmp_filter_ctx *c)
{
    if (*c)
        seccomp_release(*c);
}
#define _cleanup_seccomp_ __attribute__((cleanup(cleanup_seccompp)))
#endif

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
