/* sidecar/kallsyms.c: checking a /proc/kallsyms text for --kernel (shown addresses, _text,
 * the bound, hidden addresses, garbage lines). */
#include <stdlib.h>
#include <string.h>

#include "sidecar/kallsyms.h"
#include "tests/unit/tap.h"

static int check(const char *text, bool cut, uint64_t *addr, flame_err *err)
{
    *err = (flame_err)FLAME_ERR_INIT;
    return sc_kallsyms_check(text, strlen(text), cut, addr, err);
}

int main(void)
{
    flame_err err;
    uint64_t t = 1;
    const char *real = "0000000000000000 A fixed_percpu_data\n"
                       "ffffffff81000000 T startup_64\n"
                       "ffffffff81000000 T _stext\n"
                       "ffffffff81000000 T _text\n"
                       "ffffffff8133f1a0 T ksys_read\n"
                       "ffffffffc0a01000 t nf_hook\t[nf_tables]\n";
    ok(check(real, false, &t, &err) == 0 && t == 0xffffffff81000000ull, "a real text: _text found");
    const char *stext_only = "ffffffff81000100 T _stext\nffffffff8133f1a0 T ksys_read\n";
    ok(check(stext_only, false, &t, &err) == 0 && t == 0xffffffff81000100ull,
       "no _text: _stext instead");
    const char *hidden = "0000000000000000 T _stext\n"
                         "0000000000000000 T _text\n"
                         "0000000000000000 T ksys_read\n";
    ok(check(hidden, false, &t, &err) < 0 && err.code == FLAME_EXIT_PERF &&
           strstr(err.msg, "hides its symbol addresses") && !strchr(err.msg, '\n') && t == 0,
       "every address 0 (kptr_restrict, no CAP_SYSLOG): refused in one line (%s)", err.msg);
    ok(check(real, true, &t, &err) < 0 && err.code == FLAME_EXIT_PERF && strstr(err.msg, "MiB"),
       "cut at the bound: refused (%s)", err.msg);
    ok(check("ffffffff8133f1a0 T ksys_read\n", false, &t, &err) < 0 && strstr(err.msg, "_text"),
       "no _text and no _stext: refused (%s)", err.msg);
    ok(check("", false, &t, &err) < 0 && strstr(err.msg, "no symbol"), "empty: refused");
    const char *garbage = "zz T _text\n"
                          "ffffffff81000000T_text\n"
                          "fffffffff81000000000 T _text\n" /* 20 digits: not an address */
                          "ffffffff81000000 T\n"
                          "\n\n\n"
                          "ffffffff82000000 T _text\n"
                          "ffffffff82000010 T _text_tail\n"; /* only the exact name counts */
    ok(check(garbage, false, &t, &err) == 0 && t == 0xffffffff82000000ull,
       "malformed lines are skipped, the exact _text found");
    ok(check("ffffffff81000000 T _text", false, &t, &err) == 0 && t == 0xffffffff81000000ull,
       "last line without a newline");
    return tap_done();
}
