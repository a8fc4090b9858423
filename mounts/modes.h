/* Allocation and lock profiles of the agent (mounts/modes.c, docs/MODES.md). */
#pragma once
#include <jvmti.h>

#include "mounts/agent.h"

/* Take the capabilities of o->alloc / o->lock, set the sampling interval, switch the events on.
 * Nothing when neither is asked for. -1 with err (AGENT_RC_BUSY: another agent holds the
 * allocation sampler). */
/* Fill err with a JVMTI error as "WHAT failed: JVMTI error N NAME" (code AGENT_RC_JVMTI) and
 * return -1; j may be NULL (no name then). Shared by agent.c and the modes. */
int agent_jvmti_fail(jvmtiEnv *j, jvmtiError e, struct agent_err *err, const char *what);

int agent_modes_start(jvmtiEnv *j, const struct agent_opts *o, struct agent_err *err);
/* Switch the events off, give the capabilities back, wait for running callbacks, and write
 * <o->dir>/perf-<pid>.<o->tag>.modes (o NULL: drop what was recorded). */
int agent_modes_stop(jvmtiEnv *j, JNIEnv *jni, const struct agent_opts *o, struct agent_err *err);

/* A window's end: write the samples so far to the same file as stop, and go on recording into
 * an empty table (events and capabilities kept). -1 with err when no alloc/lock profile runs or
 * the file cannot be written (those samples are lost; the next window starts afresh). */
int agent_modes_flush(jvmtiEnv *j, JNIEnv *jni, const struct agent_opts *o, struct agent_err *err);

void JNICALL agent_on_alloc(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object,
                            jclass klass, jlong size);
void JNICALL agent_on_contended_enter(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread, jobject object);
void JNICALL agent_on_contended_entered(jvmtiEnv *jvmti, JNIEnv *jni, jthread thread,
                                        jobject object);
