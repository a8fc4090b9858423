/* Counts for people: "12,917" (samples, windows, stacks in summaries, progress, tables and
 * subtitles). What scripts read (--summary-json, ps -q, folded text) never goes through it. */
#pragma once
#include <stddef.h>

/* 1234567 -> "1,234,567" (rounded to an integer; buf returned) */
const char *grouped(double v, char *buf, size_t n);
