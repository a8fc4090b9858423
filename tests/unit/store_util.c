/* store/store_util.c: labels and stacks are cut where they may be; the shares of ls's sizes add
 * up to the disk to the byte, whatever the weights and their order; a window's checks and uid. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/store_impl.h"
#include "tests/unit/tap.h"

static void test_bounds(void)
{
    char label[STORE_MAX_LABEL], big[600];
    memset(big, 'x', sizeof big);
    big[sizeof big - 1] = 0;
    store_label_copy(label, big);
    is_int(strlen(label), STORE_MAX_LABEL - 1, "a long label is cut");
    /* a 2-byte UTF-8 character across the cut is left out whole */
    memset(big, 'x', sizeof big);
    big[STORE_MAX_LABEL - 2] = (char)0xc3;
    big[STORE_MAX_LABEL - 1] = (char)0xa9;
    big[sizeof big - 1] = 0;
    store_label_copy(label, big);
    is_int(strlen(label), STORE_MAX_LABEL - 2, "the cut does not split a UTF-8 character");
    store_label_copy(label, NULL);
    is_str(label, "", "a missing label is empty");

    size_t n = STORE_MAX_STACK + 1000;
    char *s = malloc(n), *buf = malloc(STORE_MAX_STACK);
    for (size_t i = 0; i < n; i++)
        s[i] = i % 10 == 9 ? ';' : 'f';
    const char *out;
    size_t len = store_stack_bound(s, n, buf, &out);
    ok(len <= STORE_MAX_STACK && out == buf, "a long stack is cut below the bound");
    ok(len > 12 && !memcmp(out + len - 12, ";[truncated]", 12) && out[len - 13] == 'f',
       "at a frame boundary, ending in [truncated]");
    memset(s, 'f', n); /* one frame, no boundary */
    len = store_stack_bound(s, n, buf, &out);
    ok(len == 11 && !memcmp(out, "[truncated]", 11), "one huge frame becomes [truncated]");
    len = store_stack_bound("a;b", 3, buf, &out);
    ok(len == 3 && out && !strcmp(out, "a;b"), "a short stack is itself");
    free(s);
    free(buf);
}

static void test_shares(void)
{
    uint64_t w[] = {1, 7, 0, 123456789, 3, 3, 3, 999, 1};
    uint64_t total = 0;
    for (size_t i = 0; i < sizeof w / sizeof *w; i++)
        total += w[i];
    uint64_t disks[] = {0, 1, 17, 442784, 1099511627776ull};
    int all = 1;
    for (size_t d = 0; d < sizeof disks / sizeof *disks; d++) {
        store_share sh = {.total = total, .disk = disks[d]};
        uint64_t sum = 0;
        for (size_t i = 0; i < sizeof w / sizeof *w; i++)
            sum += store_share_of(&sh, w[i]);
        all &= sum == disks[d];
    }
    ok(all, "shares of a disk add up to it, from 0 bytes to 1 TiB");
    store_share sh = {.total = 4, .disk = 1000};
    uint64_t a = store_share_of(&sh, 1), b = store_share_of(&sh, 3);
    ok(a == 250 && b == 750, "in proportion to the weights (250, 750)");
    store_share none = {.total = 0, .disk = 1000};
    is_int(store_share_of(&none, 5), 0, "no weight at all: no share");
}

static void test_uid(void)
{
    uint64_t a = store_uid(), b = store_uid();
    ok(a && b && a != b, "uids are never 0 and differ");
}

int main(void)
{
    test_bounds();
    test_shares();
    test_uid();
    return tap_done();
}
