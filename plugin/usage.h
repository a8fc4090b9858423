/* `docker flame --help` (also `docker help flame`, and a bare `docker flame` on stderr): the
 * profile verb's options and every other verb of the table, one line each (plugin/usage.c). */
#pragma once
#include <stdio.h>

void flame_usage(FILE *out);
