/* ClickHouse's text formats as the store speaks them over HTTP: values in TabSeparated rows
 * (both ways) and string literals in SQL (18.16 has no query parameters). Everything a container
 * gave us goes through these, so its bytes stay data. Pure code. */
#pragma once
#include <stddef.h>
#include <stdio.h>

/* s[0..n) as one TabSeparated value: \t \n \\ and every control byte escaped. */
void ch_tsv_put(FILE *f, const char *s, size_t n);
/* s as a quoted SQL string literal: '...' with ' \ and control bytes escaped. */
void ch_sql_str(FILE *f, const char *s);
/* Split the TabSeparated row line[0..len) (no newline; line[len] must be writable: the newline's
 * place) into at most max fields, unescaped in place: fields[i] points into line and is
 * NUL-terminated, lens[i] its length. Returns the number of fields, or -1 for more than max or a
 * dangling backslash. */
int ch_tsv_fields(char *line, size_t len, char **fields, size_t *lens, int max);
