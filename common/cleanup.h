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
/* DEFINE_CLEANUP(name, type, release) makes `_cleanup_name_`, which calls release(x) on scope exit
 * when x is not NULL. */
#define DEFINE_CLEANUP(name, type, release)                                                        \
    static inline void cleanup_##name##p(type *p)                                                  \
    {                                                                                              \
        if (*p)                                                                                    \
            release(*p);                                                                           \
    }

#ifdef JANSSON_H
DEFINE_CLEANUP(json, json_t *, json_decref)
#define _cleanup_json_ __attribute__((cleanup(cleanup_jsonp)))
#endif
#ifdef CURLINC_CURL_H
DEFINE_CLEANUP(curl, CURL *, curl_easy_cleanup)
DEFINE_CLEANUP(curl_slist, struct curl_slist *, curl_slist_free_all)
#define _cleanup_curl_ __attribute__((cleanup(cleanup_curlp)))
#define _cleanup_curl_slist_ __attribute__((cleanup(cleanup_curl_slistp)))
#endif
#ifdef _SYS_CAPABILITY_H
DEFINE_CLEANUP(cap, cap_t, cap_free)
#define _cleanup_cap_ __attribute__((cleanup(cleanup_capp)))
#endif
#ifdef _SECCOMP_H
DEFINE_CLEANUP(seccomp, scmp_filter_ctx, seccomp_release)
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
