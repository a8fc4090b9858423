/* store/sqlite_db.c's sq_rows_grow: the growing row arrays of compaction's group finder and the
 * rollups' hour finder. Room from 256 rows, doubled when full, the rows kept when it moves; a
 * size whose doubling would wrap, or a caller that skipped rows, is refused with an error and
 * the array left as it was. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_impl.h"
#include "tests/unit/tap.h"

typedef struct row {
    int64_t a, b;
    char type[16];
} row;

static void test_grow(void)
{
    flame_err err = FLAME_ERR_INIT;
    row *rows = NULL;
    size_t n = 0, cap = 0;
    bool same = true, kept = true;
    for (int64_t i = 0; i < 1000; i++) {
        row *p = sq_rows_grow(rows, n, &cap, sizeof *rows, &err);
        if (!p)
            break;
        if (n && n < 256 && p != rows)
            same = false; /* room left: the same array */
        rows = p;
        rows[n++] = (row){i, -i, "wall"};
    }
    is_int(n, 1000, "1000 rows added");
    is_int(cap, 1024, "room doubled from 256: 1024");
    ok(same, "no move while there is room");
    for (size_t i = 0; i < n; i++)
        if (rows[i].a != (int64_t)i || rows[i].b != -(int64_t)i || strcmp(rows[i].type, "wall"))
            kept = false;
    ok(kept, "every row kept through the moves");

    /* refused: rows skipped (n past the room), a size whose doubling wraps, size 0 */
    size_t c = cap;
    ok(sq_rows_grow(rows, cap + 1, &c, sizeof *rows, &err) == NULL && c == cap && err.msg[0],
       "a row past the room is refused: %s", err.msg);
    c = SIZE_MAX / 32;
    err = (flame_err)FLAME_ERR_INIT;
    ok(sq_rows_grow(rows, c, &c, 32, &err) == NULL && c == SIZE_MAX / 32 &&
           err.code == FLAME_EXIT_ERROR,
       "a doubling that would wrap is refused, not wrapped");
    c = 0;
    ok(sq_rows_grow(NULL, 0, &c, 0, &err) == NULL && c == 0, "size 0 is refused");
    ok(rows[999].a == 999, "the array is as it was after a refusal");
    free(rows);
}

/* sq_pairs_append: windows' pairs one after another, in order, whatever the room */
static void test_pairs_append(void)
{
    flame_err err = FLAME_ERR_INIT;
    store_pair *all = NULL, win[300];
    size_t n = 0, cap = 0;
    bool good = true;
    for (int w = 0; w < 50; w++) {
        size_t k = (size_t)(w * 7) % 300; /* 0 too: a window without pairs */
        for (size_t i = 0; i < k; i++)
            win[i] = (store_pair){.id = (uint64_t)(w * 1000 + (int)i), .count = (uint64_t)i + 1};
        if (sq_pairs_append(&all, &n, &cap, win, k, &err) < 0 || n > cap)
            good = false;
    }
    ok(good, "50 windows appended (%zu pairs, room for %zu)", n, cap);
    size_t at = 0;
    for (int w = 0; w < 50 && good; w++)
        for (size_t i = 0; i < (size_t)(w * 7) % 300; i++, at++)
            if (all[at].id != (uint64_t)(w * 1000 + (int)i) || all[at].count != i + 1)
                good = false;
    ok(good && at == n, "every pair kept, in order");
    free(all);
}

int main(void)
{
    test_grow();
    test_pairs_append();
    return tap_done();
}
