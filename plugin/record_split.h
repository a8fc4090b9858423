/* One recorded window of a container, split into one window per JVM (docs/RECORD.md, "Several
 * JVMs"): the recorder stores each JVM of a container as a series of its own, labelled with its
 * pid and version. Pure code (no Docker, no store). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "common/contract.h"
#include "common/err.h"
#include "flame/profile.h"

/* The most parts of one window: the JVMs the stream may announce, and "no JVM known". */
#define REC_SPLIT_MAX 65

typedef struct rec_part {
    int64_t pid;         /* the JVM's pid in the container; 0: stacks of no JVM known */
    const char *version; /* its version ("" when unknown); points into jvms */
    profile *p;          /* its stacks (owned; may be empty) */
} rec_part;

/* Split p (a window of the container's JVMs jvms[0..n)) into parts, one per JVM, each even when
 * it ran nothing (the timeline then shows it idle, not absent). With several JVMs, the sidecar
 * starts each stack with a root frame naming its JVM ("java-<pid>" or "java-<pid> <main
 * class>"): that frame goes (the part's label says it), the rest is the JVM's stack. A stack
 * whose root names no JVM of jvms (one that started meanwhile) goes to a part of pid 0. With one
 * JVM (or none known: pid0 labels it) the window is that JVM's as it is. Parts are freed with
 * rec_split_free. 0, or -1 (out of memory, err set). */
int rec_split(const profile *p, const ct_jvm *jvms, size_t n, int64_t pid0, rec_part *out,
              size_t *nout, flame_err *err);
void rec_split_free(rec_part *parts, size_t n);
