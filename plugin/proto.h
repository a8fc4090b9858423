/* The sidecar's result stream (docs/PROTOCOL.md, version 1): one parser per sidecar, fed the
 * stdout lines of the attach stream. Everything in it came from a container: bounded, and only
 * ever printed through the plugin's own escaping. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "common/err.h"
#include "flame/profile.h"

#define PROTO_MAX_WARNINGS 64

typedef struct proto {
    int version;     /* from V; 0 before it */
    bool done;       /* D seen */
    bool progress;   /* at least one P seen: recording has started */
    json_t *jvms;    /* array of the J objects */
    json_t *summary; /* S object or NULL */
    long long elapsed_ms, duration_ms, samples;
    long long njvms;
    char *warnings[PROTO_MAX_WARNINGS];
    size_t nwarn, dropped_warn;
    char err_code[32]; /* E code, "" when none */
    char *err_text;
    profile *prof; /* F lines; created on the first F */
    unsigned long long f_lines;
} proto;

void proto_init(proto *p);
void proto_clear(proto *p);
/* One stdout line (no '\n'). Malformed input is an error: the stream is not trusted. */
int proto_line(proto *p, const char *line, size_t len, flame_err *err);
/* Exit code for an E code (FLAME_EXIT_*). */
int proto_err_exit(const char *code);
/* Copy s into out (size n) keeping printable ASCII/UTF-8 only (for the terminal). */
void proto_sanitize(const char *s, char *out, size_t n);
