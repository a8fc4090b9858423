/* The speedscope export (flame/speedscope.c): speedscope's file format, one "sampled" profile. */
#pragma once
#include <stdio.h>

#include "common/err.h"
#include "flame/profile.h"

/* One "sampled" profile named `name`. */
int speedscope_export(const profile *p, const char *name, FILE *out, flame_err *err);
