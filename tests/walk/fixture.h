/* Recorded samples for the stack walker's tests (tests/walk/README.md): what the recorder had for
 * real samples of a real JVM -- each sample record as the kernel wrote it (registers, stack copy,
 * the kernel's frame-pointer chain), the process's executable mappings, the names of its
 * threads -- and exactly the bytes of the JVM's memory the walk read through /proc/<pid>/mem.
 *
 * Both the capture tool and the replay test are linked with -Wl,--wrap=pread: every pread of the
 * sidecar's code goes through __wrap_pread below. Capturing, reads of the registered memory
 * descriptor are served by the kernel and logged (rounded out to 64-byte lines, first content
 * wins); replaying, reads of the registered descriptor are served from the recorded bytes and
 * fail (EIO, as /proc/<pid>/mem does for unmapped memory) for anything not recorded. Memory that
 * changed while the capture ran (a blob freed and reused, the segment map) is kept as overlays:
 * bytes that differ from what was first read, from the sample where they were read on; a replay
 * says which sample it is at (wf_at) and sees the memory as that sample's walk saw it.
 *
 * File (little endian): "FLWALK3\n"; u32 pid; u32 n_maps {u64 start, end, pgoff; u16 len; path};
 * u32 n_threads {u32 tid; char comm[16]}; u32 n_ranges {u64 addr; u32 len; bytes};
 * u32 n_overlays {u64 addr; u32 len; u32 from; bytes}; u32 n_fails {u64 addr; u32 len}: reads
 * the kernel refused; u32 n_samples {u32 len; u32 pass;
 * record}: pass, the recorder's pump pass the sample was drained in. Stored gzip'ed in
 * tests/data/walk/. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct wf_map {
    uint64_t start, end, pgoff;
    char path[512];
} wf_map;

typedef struct wf_thread {
    uint32_t tid;
    char comm[16];
} wf_thread;

typedef struct wf_range {
    uint64_t addr;
    uint32_t len;
    uint32_t from; /* overlays: the first sample that saw these bytes */
    unsigned char *data;
} wf_range;

typedef struct wf_sample {
    uint32_t len, pass;
    unsigned char *rec;
} wf_sample;

typedef struct wf_fixture {
    uint32_t pid;
    wf_map *maps;
    uint32_t n_maps;
    wf_thread *threads;
    uint32_t n_threads;
    wf_range *ranges; /* sorted by addr, not overlapping */
    uint32_t n_ranges;
    wf_range *overlays; /* by from */
    uint32_t n_overlays;
    wf_range *fails; /* reads that failed while capturing (no data) */
    uint32_t n_fails;
    wf_sample *samples;
    uint32_t n_samples;
} wf_fixture;

/* Capture: log reads of fd from now on. */
void wf_capture_start(int fd);
/* Capture and replay: the sample being walked (reads are logged or served as of it). */
void wf_at(uint32_t sample);
/* The bytes logged so far, merged, into f->ranges and f->overlays. */
int wf_capture_ranges(wf_fixture *f);
/* Replay: reads of fd come from f's ranges. */
void wf_replay(int fd, const wf_fixture *f);
/* Replay: reads refused so far (not recorded); reads asked for. */
uint64_t wf_replay_misses(void);
uint64_t wf_replay_reads(void);
/* Replay: the 8-byte word at addr reads as delta more than recorded (a counter that moved), until
 * wf_poke(0, 0). */
void wf_poke(uint64_t addr, int64_t delta);

int wf_write(const char *path, const wf_fixture *f);
/* Read a fixture; a path ending in .gz is read through gzip -dc. 0 ok, -1 with errno. */
int wf_read(const char *path, wf_fixture *f);
void wf_free(wf_fixture *f);
const char *wf_comm(const wf_fixture *f, uint32_t tid);
