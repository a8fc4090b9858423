/* Differential profiles (difffolded.pl semantics) and merging of profiles, plus the "movers":
 * which methods' share of the samples grew or shrank most between two profiles. Pure code: the
 * CLI (plugin/cmd_diff.c) loads inputs, renders, and prints the movers table. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"

enum diff_norm {
    DIFF_NORM_AUTO = 0, /* scale "before" to the "after" total when the totals differ */
    DIFF_NORM_ON,       /* difffolded.pl -n */
    DIFF_NORM_OFF,
};

typedef struct diff_opts {
    enum diff_norm normalize;
    bool strip_hex; /* difffolded.pl -s: every 0x[0-9a-fA-F]+ in a stack becomes 0x... */
    /* Match stacks exactly as folded. Default: as read (flame/match.h), stacks that differ only
     * in what the JIT made of a frame (_[j] _[i] _[int]) are one stack. */
    bool exact;
} diff_opts;

typedef struct diff diff;

/* Build the union of a (before) and b (after): stacks missing on one side count 0 there.
 * Consumes a and b (both are freed, also on error). Neither may be differential. */
int diff_new(profile *a, profile *b, const diff_opts *o, diff **out, flame_err *err);
void diff_free(diff *d);

double diff_total_before(const diff *d); /* raw totals, before any scaling */
double diff_total_after(const diff *d);
bool diff_normalized(const diff *d); /* normalisation applied (scale != 1) */
/* Both profiles count samples (their smallest counts are at most 100), not sums of periods:
 * their counts have a known noise (render_opts.diff_noise, diff_mover.noise_pts). */
bool diff_counts_samples(const diff *d);
/* Matching as read changed the union (some frames differed only in their JIT marks); *merged:
 * how many stacks became part of another. */
bool diff_matched(const diff *d, size_t *merged);

/* The two-column profile to render or write, owned by d; the forward and the mirrored view are
 * two profiles, so both can be rendered at the same time (each is valid until the next call for
 * the same direction). NULL on OOM (mirror only: its counts need a copy of the stacks).
 * Forward (mirror = false): "before after" with before scaled to the after total as difffolded.pl
 * -n does (int(), i.e. truncated); render it plainly: widths are the after profile.
 * Mirror: "after before" with after scaled to the before total; render it with negate = true:
 * widths are the before profile (stacks that vanished are visible there), and colours still say
 * red = grew from before to after. */
const profile *diff_view(diff *d, bool mirror);

/* Folded text of any profile, stacks sorted frame by frame (names compared whole, as renderers
 * merge them; profile_write_folded() sorts by text instead), written in large blocks (a
 * 1M-stack diff is ~500 MB of text). */
int diff_write_folded(const profile *p, FILE *out, flame_err *err);

/* One method and its share of all samples before and after, in percent. */
typedef struct diff_mover {
    const char *name; /* the method, raw bytes from the profile (escape them for a terminal):
                       * owned by d, valid until the next diff_movers() or diff_free(). In
                       * hosts[]: the method its inlined code ran in, NULL for the rest (its own
                       * frames, compiled or interpreted) */
    double before_pct, after_pct, delta_pts;
    /* Two standard errors of delta_pts when both profiles count samples (diff_counts_samples):
     * the change two profiles of the same code show by chance about one time
     * in twenty; NAN when the counts are sums of periods (not samples). */
    double noise_pts;
    /* Self share, when some of the method's time was inlined code: where its self time ran,
     * the net above split by host (they add up to it; one entry when it always ran inlined into
     * one host), largest change first; else none. */
    const struct diff_mover *hosts;
    size_t nhosts;
} diff_mover;

typedef struct diff_movers_opts {
    bool inclusive;  /* total share (each frame counted once per stack) instead of self share */
    bool all_frames; /* every frame, not only the ones that look like Java methods */
} diff_movers_opts;

/* The methods whose share grew most (grew[], delta > 0, largest first) and shrank most
 * (shrank[], delta < 0, most negative first), at most n each; changes smaller than
 * MOVER_MIN_PTS percentage points (printed as 0.00) are left out. A method is one mover whatever
 * the JIT made of it (net): self share, its leaf samples, with the hosts its inlined code ran in
 * as details (a method inlined into one caller before and into another after has not moved);
 * inclusive, each method once per stack. Counted on the stacks exactly as folded (the hosts
 * need the marks), so the movers are the same with or without diff_opts.exact. Returns 0 or -1
 * on OOM. */
#define MOVER_MIN_PTS 0.005
int diff_movers(diff *d, const diff_movers_opts *o, size_t n, diff_mover *grew, size_t *ngrew,
                diff_mover *shrank, size_t *nshrank, flame_err *err);

/* The smallest non-zero count of a (one-column) profile, 0 if none: sample counts go down to
 * 1, sums of periods never below one period (the CLI's check for mismatched units). */
double diff_smallest_count(const profile *p);

/* Sum profiles. normalize: scale each input to the largest input total first
 * (counts rounded to integers; every factor is >= 1 so no non-zero count becomes 0), so each
 * input weighs the same. Stacks are matched as read unless exact (diff_opts.exact). Consumes
 * in[0..n) (freed, also on error; the array itself is not freed).
 */
int diff_merge(profile **in, size_t n, bool normalize, bool exact, profile **out, flame_err *err);
