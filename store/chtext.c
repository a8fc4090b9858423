/* ClickHouse's text formats (store/chtext.h). Escapes follow ClickHouse's own reader
 * (readEscapedString: \b \f \r \n \t \0 \' \\ and \xHH), which 18.16 and current servers share. */
#include "store/chtext.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void put_escaped(FILE *f, const char *s, size_t n, bool quote)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '\t':
            fputs("\\t", f);
            break;
        case '\n':
            fputs("\\n", f);
            break;
        case '\\':
            fputs("\\\\", f);
            break;
        case '\'':
            fputs(quote ? "\\'" : "'", f);
            break;
        default:
            if (c < 0x20 || c == 0x7f)
                fprintf(f, "\\x%02x", c);
            else
                putc(c, f);
        }
    }
}

void ch_tsv_put(FILE *f, const char *s, size_t n)
{
    put_escaped(f, s, n, false);
}

void ch_sql_str(FILE *f, const char *s)
{
    putc('\'', f);
    put_escaped(f, s, strlen(s), true);
    putc('\'', f);
}

/* \xHH: the byte, or -1 */
static int hex_byte(const char *p, size_t left)
{
    if (left < 2 || !isxdigit((unsigned char)p[0]) || !isxdigit((unsigned char)p[1]))
        return -1;
    char two[3] = {p[0], p[1], 0};
    return (int)strtol(two, NULL, 16);
}

int ch_tsv_fields(char *line, size_t len, char **fields, size_t *lens, int max)
{
    int nf = 0;
    size_t i = 0, o = 0;
    for (;;) {
        if (nf == max)
            return -1;
        fields[nf] = line + o;
        size_t start = o;
        while (i < len && line[i] != '\t') {
            char c = line[i++];
            if (c == '\\') {
                if (i >= len)
                    return -1;
                char e = line[i++];
                static const char from[] = "btnfr0", to[] = "\b\t\n\f\r";
                const char *k = strchr(from, e);
                int x = e == 'x' ? hex_byte(line + i, len - i) : -1;
                if (x >= 0) {
                    c = (char)x;
                    i += 2;
                } else if (k && e) {
                    c = to[k - from]; /* "\0" maps to the terminating NUL of `to` */
                } else {
                    c = e; /* \\ \' and anything else: the character itself */
                }
            }
            line[o++] = c;
        }
        lens[nf++] = o - start;
        bool more = i < len; /* stopped at a tab */
        line[o++] = 0; /* o <= i here: unescaping only shrinks, the tab's place takes the NUL */
        i++;
        if (!more)
            return nf;
    }
}
