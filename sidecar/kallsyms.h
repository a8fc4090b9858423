/* Kernel symbols for `--kernel` (docs/SIDECAR.md "Kernel frames"): a bounded copy of
 * /proc/kallsyms made during setup, while the sidecar still holds CAP_SYSLOG, for perf script's
 * --kallsyms after the privilege drop. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

#include <sys/types.h>

#define SC_KALLSYMS_MAX (64u << 20) /* /proc/kallsyms is ~5 MiB on a distribution kernel */

/* Pure: checks a kallsyms text (len bytes; truncated = it was cut at the bound) and finds the
 * address of `_text` (else `_stext`), which the recorder announces as the kernel's mapping.
 * Fails with one line when the text was cut, when every address reads 0 (the kernel hides them
 * from this reader: kptr_restrict, or no CAP_SYSLOG) or when there is no _text. */
int sc_kallsyms_check(const char *buf, size_t len, bool truncated, uint64_t *text, flame_err *err);

/* Reads /proc/kallsyms (at most SC_KALLSYMS_MAX bytes), checks it and copies it into a file
 * without a name (memfd_create) owned by reader, mode 0600, sealed; *fd (close-on-exec) is the
 * only way to it: perf script, running as reader, opens /proc/self/fd/<fd> (process.c). The
 * kernel decides whether addresses are shown when the file is opened, from the opener's
 * credentials: call it while holding CAP_SYSLOG. */
int sc_kallsyms_copy(uid_t reader, int *fd, uint64_t *text, flame_err *err);
/* CAP_SYSLOG out of our effective, permitted and inheritable sets: once the copy is made, no
 * later phase needs it. */
int sc_kallsyms_drop_syslog(flame_err *err);
