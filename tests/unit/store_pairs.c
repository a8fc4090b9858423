/* store/pairs.c and store/chtext.c: pairs survive the round trip whatever their values, damaged
 * blobs are refused without a byte read past their end (ASan watches), and hostile bytes go
 * through the ClickHouse text formats and come back unchanged. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/chtext.h"
#include "store/pairs.h"
#include "store/store.h"
#include "tests/unit/tap.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* 1 when blob[0..len) is refused, decoded from an exact-size copy (ASan sees any overread) */
static int refused(const uint8_t *blob, size_t len)
{
    uint8_t *exact = malloc(len ? len : 1);
    memcpy(exact, blob, len);
    pairs_buf b = {0};
    int r = pairs_decode(len ? exact : NULL, len, &b);
    pairs_buf_free(&b);
    free(exact);
    return r == -1;
}

/* encode then decode n random pairs; 1 when they come back equal */
static int round_trip(size_t n, uint64_t id_span, uint64_t count_span, size_t *bytes)
{
    store_pair *p = calloc(n ? n : 1, sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (store_pair){1 + next_rand() % id_span, 1 + next_rand() % count_span};
    n = pairs_normalize(p, n);
    uint8_t *blob = malloc(pairs_bound(n));
    size_t len = pairs_encode(p, n, blob);
    uint8_t *exact = malloc(len);
    memcpy(exact, blob, len);
    pairs_buf b = {0};
    int same = len > 0 && pairs_decode(exact, len, &b) == 0 && b.n == n;
    for (size_t i = 0; same && i < n; i++)
        same = b.p[i].id == p[i].id && b.p[i].count == p[i].count;
    *bytes = len;
    pairs_buf_free(&b);
    free(p);
    free(blob);
    free(exact);
    return same;
}

static void test_pairs(void)
{
    size_t bytes;
    ok(round_trip(0, 10, 10, &bytes) && bytes == 2, "no pairs: two bytes");
    ok(round_trip(1, 1, 1, &bytes), "one pair");
    ok(round_trip(1300, 20000, 4, &bytes), "1300 pairs among 20000 ids");
    ok(bytes < 1300 * 2, "a window's worth: under 2 bytes a pair (%zu bytes)", bytes);
    ok(round_trip(500, UINT64_MAX - 1, UINT64_MAX - 1, &bytes), "full 64-bit ids and counts");
    int all = 1;
    for (int k = 0; k < 200; k++)
        all &=
            round_trip(next_rand() % 300, 1 + next_rand() % 100000, 1 + next_rand() % 1000, &bytes);
    ok(all, "200 random windows, plain and deflated");

    store_pair p[] = {{5, 2}, {3, 1}, {5, 4}, {9, 1}};
    size_t n = pairs_normalize(p, 4);
    ok(n == 3 && p[0].id == 3 && p[1].id == 5 && p[1].count == 6 && p[2].id == 9,
       "normalize sorts and adds equal ids");

    /* damage: every truncation, every byte changed, of a plain and of a deflated blob */
    store_pair big[64];
    for (int i = 0; i < 64; i++)
        big[i] = (store_pair){(uint64_t)(i * 3 + 1), 1 + (uint64_t)(i % 3)};
    uint8_t blobs[2][2048];
    size_t lens[2] = {pairs_encode(p, n, blobs[0]), pairs_encode(big, 64, blobs[1])};
    ok(blobs[0][0] == 0 && blobs[1][0] == 1, "a small window is stored plain, a larger deflated");
    for (int k = 0; k < 2; k++) {
        int all_cut = 1, bounded = 1;
        for (size_t cut = 0; cut < lens[k]; cut++)
            all_cut &= refused(blobs[k], cut);
        for (size_t i = 0; i < lens[k]; i++)
            for (int v = 0; v < 256; v += 5) {
                uint8_t b[2048];
                memcpy(b, blobs[k], lens[k]);
                b[i] = (uint8_t)v;
                pairs_buf pb = {0};
                int r = pairs_decode(b, lens[k], &pb);
                bounded &= r == -1 || (r == 0 && pb.n <= 64);
                pairs_buf_free(&pb);
            }
        ok(all_cut, "%s: every truncation is refused", k ? "deflated" : "plain");
        ok(bounded, "%s: a changed byte is refused or decodes within bounds",
           k ? "deflated" : "plain");
    }
    uint8_t zero_gap[] = {0, 2, 1, 0, 1, 1};
    ok(refused(zero_gap, sizeof zero_gap), "a repeated id (gap 0) is damage");
    uint8_t overflow[] = {0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, 1};
    ok(refused(overflow, sizeof overflow), "a varint above 64 bits is damage");
    uint8_t trailing[] = {0, 1, 1, 1, 7};
    ok(refused(trailing, sizeof trailing), "bytes after the last count are damage");
    uint8_t too_many[] = {0, 100, 1, 1};
    ok(refused(too_many, sizeof too_many), "more pairs announced than bytes");
    uint8_t format[] = {7, 1, 1, 1};
    ok(refused(format, sizeof format), "an unknown format");
    uint8_t bomb[] = {1, 1, 0xe8, 0x07, 0x63, 0x00, 0x00};
    ok(refused(bomb, sizeof bomb), "a body longer than its pair count allows is not inflated");
}

static void test_chtext(void)
{
    /* every byte value but NUL, twice, through a TSV row of three fields */
    char hostile[600];
    size_t n = 0;
    for (int k = 0; k < 2; k++)
        for (int c = 1; c < 256; c++)
            hostile[n++] = (char)c;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ch_tsv_put(f, "plain", 5);
    fputc('\t', f);
    ch_tsv_put(f, hostile, n);
    fputc('\t', f);
    ch_tsv_put(f, "", 0);
    fclose(f);
    ok(!memchr(text, '\n', len) && strlen(text) == len, "escaped: no newline, no NUL");
    int tabs = 0;
    for (size_t i = 0; i < len; i++)
        tabs += text[i] == '\t';
    is_int(tabs, 2, "escaped: only the two separating tabs");
    char *line = malloc(len + 1);
    memcpy(line, text, len + 1);
    char *fields[4];
    size_t lens[4];
    is_int(ch_tsv_fields(line, len, fields, lens, 4), 3, "three fields back");
    ok(lens[1] == n && !memcmp(fields[1], hostile, n), "hostile bytes come back unchanged");
    ok(lens[0] == 5 && !strcmp(fields[0], "plain") && lens[2] == 0, "plain and empty fields");
    free(line);
    free(text);

    /* ClickHouse's own escapes, as its TabSeparated output writes them */
    char row[] = "a\\tb\\\\c\\'d\\0e\\x41\t\\n";
    is_int(ch_tsv_fields(row, strlen(row), fields, lens, 2), 2, "server row: two fields");
    ok(lens[0] == 10 && !memcmp(fields[0], "a\tb\\c'd\0eA", 10), "server escapes undone");
    ok(lens[1] == 1 && fields[1][0] == '\n', "escaped newline");
    char dangling[] = "abc\\";
    is_int(ch_tsv_fields(dangling, 4, fields, lens, 2), -1, "a dangling backslash is refused");
    char many[] = "a\tb\tc";
    is_int(ch_tsv_fields(many, 5, fields, lens, 2), -1, "more fields than wanted is refused");

    text = NULL;
    f = open_memstream(&text, &len);
    ch_sql_str(f, "it's a \\ test\n'); DROP TABLE samples; --");
    fclose(f);
    is_str(text, "'it\\'s a \\\\ test\\n\\'); DROP TABLE samples; --'",
           "SQL literal: quotes, backslashes and newlines escaped");
    free(text);
}

int main(void)
{
    test_pairs();
    test_chtext();
    return tap_done();
}
