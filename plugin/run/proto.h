/* The sidecar's result stream, read (docs/PROTOCOL.md, common/contract.h): one parser per
 * sidecar, fed the stdout lines of its attach stream. Payloads are read back into the contract's
 * structs. Everything in the stream came from a container: bounded, and only ever printed
 * through proto_sanitize(). */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/contract.h"
#include "common/err.h"
#include "flame/profile.h"

#define PROTO_MAX_WARNINGS 64
#define PROTO_MAX_JVMS 64

#define PROTO_MAX_TASKS (256 * 1024) /* host: K lines kept */
#define PROTO_MAX_TL (4u << 20)      /* host: timeline samples kept */
/* host: one thread of the timeline (a K line) */
typedef struct proto_task {
    uint32_t pid, tid, vpid, vtid;
    char key[144], pcomm[17], tcomm[17];
} proto_task;
typedef struct proto_tl {
    uint32_t cpu, ms, tid;
} proto_tl;

typedef struct proto {
    int version;   /* from V; 0 before it */
    bool done;     /* D seen */
    bool progress; /* at least one P seen: recording has started */
    ct_jvm *jvms;  /* the J lines (at most PROTO_MAX_JVMS kept) */
    size_t njvms;
    ct_progress prog; /* the last P line (samples also updated by S) */
    bool have_summary;
    ct_summary summary;
    bool have_host; /* host: the H line */
    ct_host host;
    proto_task *tasks; /* host: K lines */
    size_t ntasks, cap_tasks;
    proto_tl *tl; /* host: U lines' samples */
    size_t ntl, cap_tl;
    char *warnings[PROTO_MAX_WARNINGS];
    size_t nwarn, dropped_warn;
    bool failed; /* E seen */
    enum ct_error err;
    char *err_text;
    profile *prof; /* F lines; created on the first F */
    unsigned long long f_lines;
    /* M lines, per mode (never CT_MODE_CPU: its stacks are F lines): the value column, and the
     * first pprof type's counts (objects, contentions) built stack for stack in the same order,
     * so that pprof_meta.first can pair them; created on the mode's first M line */
    profile *mprof[CT_MODE_COUNT], *mprof0[CT_MODE_COUNT];
    unsigned long long m_lines;
} proto;

void proto_init(proto *p);
void proto_clear(proto *p);
/* The profile of one mode: prof for cpu, mprof[] for the others; NULL when none came. */
const profile *proto_profile(const proto *p, enum ct_mode m);
/* One stdout line (no '\n'). Malformed input is an error: the stream is not trusted. */
int proto_line(proto *p, const char *line, size_t len, flame_err *err);
/* The payloads, read back into the contract's structs (0, or -1 with err). */
int proto_read_jvm(const char *s, size_t n, ct_jvm *out, flame_err *err);
int proto_read_progress(const char *s, size_t n, ct_progress *out, flame_err *err);
int proto_read_summary(const char *s, size_t n, ct_summary *out, flame_err *err);
/* pure: a K payload. 0 or -1. */
int proto_read_task(const char *s, size_t n, proto_task *t);
int proto_read_host(const char *s, size_t n, ct_host *out, flame_err *err);
int proto_read_window(const char *s, size_t n, ct_window *out, flame_err *err);
/* Copy s into out (size n) keeping printable ASCII/UTF-8 only (for the terminal). */
void proto_sanitize(const char *s, char *out, size_t n);
