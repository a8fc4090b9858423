/* Store URLs as users type them: a ClickHouse password never in a message, taken from the URL,
 * a 0600 password_file or $DOCKER_FLAME_STORE_PASSWORD; overwritten in argv (store_url_scrub);
 * every file path of a URL made absolute for a process that leaves its directory
 * (store_url_absolute). No server: opening a ClickHouse store sends nothing. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/clickhouse_impl.h"
#include "tests/unit/store_helpers.h"
#include "tests/unit/tap.h"

/* Open url; on success the password and user it ended with, else the error. */
static int open_ch(const char *url, char *user, char *pw, flame_err *e)
{
    store *s = NULL;
    *e = (flame_err)FLAME_ERR_INIT;
    user[0] = pw[0] = 0;
    int rc = store_open(url, &s, e);
    if (rc == 0) {
        strcpy(user, ch_of(s)->user);
        strcpy(pw, ch_of(s)->password);
    }
    store_close(s);
    return rc;
}

static void test_messages(void)
{
    char u[128], pw[128];
    flame_err e;
    /* the review's reproduction, and the same with an unencoded '/' or '?' in the password */
    static const char *const bad[] = {
        "clickhouse://alice:S3cretPw@bad_host:8123/flame",
        "clickhouse://alice:S3cretPw@host:99999/flame",
        "clickhouse://alice:S3cret/Pw@host:8123/flame",
        "clickhouse://alice:S3cret?Pw@host:8123/flame",
        "clickhouses://alice:S3cretPw@[zz]/flame",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        int rc = open_ch(bad[i], u, pw, &e);
        ok(rc < 0 && e.code == FLAME_EXIT_USAGE && !strstr(e.msg, "S3cret") &&
               !strstr(e.msg, "alice"),
           "refused without the user or password: %s", e.msg);
    }
    open_ch("clickhouse://alice:S3cretPw@bad_host:8123/flame", u, pw, &e);
    ok(strstr(e.msg, "bad host in \"clickhouse://bad_host:8123/flame\"") != NULL,
       "the host part is shown (%s)", e.msg);
}

static void test_password_sources(void)
{
    char u[128], pw[128];
    flame_err e;
    unsetenv("DOCKER_FLAME_STORE_PASSWORD");
    is_int(open_ch("clickhouse://bob:fromurl@127.0.0.1/db", u, pw, &e), 0, "a password in the URL");
    ok(!strcmp(u, "bob") && !strcmp(pw, "fromurl"), "is used as given");
    is_int(open_ch("clickhouse://bob:p%40ss%2Fw@127.0.0.1/db", u, pw, &e), 0, "%%XX-encoded");
    is_str(pw, "p@ss/w", "is decoded");

    setenv("DOCKER_FLAME_STORE_PASSWORD", "fromenv", 1);
    is_int(open_ch("clickhouse://bob@127.0.0.1/db", u, pw, &e), 0, "a user without a password");
    ok(!strcmp(u, "bob") && !strcmp(pw, "fromenv"), "takes $DOCKER_FLAME_STORE_PASSWORD");
    is_int(open_ch("clickhouse://127.0.0.1/db", u, pw, &e), 0, "no user either");
    ok(!strcmp(u, "default") && !strcmp(pw, "fromenv"), "the default user's password then");
    open_ch("clickhouse://bob:fromurl@127.0.0.1/db", u, pw, &e);
    is_str(pw, "fromurl", "the URL's own password wins over the environment's");

    /* password_file: a 0600 file's first line */
    const char *f = in_scratch("pw");
    FILE *fp = fopen(f, "w");
    fputs("fromfile\nsecond line\n", fp);
    fclose(fp);
    chmod(f, 0600);
    char url[600];
    snprintf(url, sizeof url, "clickhouse://bob@127.0.0.1/db?password_file=%s", f);
    is_int(open_ch(url, u, pw, &e), 0, "password_file= of a 0600 file");
    is_str(pw, "fromfile", "its first line, over the environment's");
    snprintf(url, sizeof url, "clickhouse://127.0.0.1/db?spool=off&password_file=%s", f);
    open_ch(url, u, pw, &e);
    ok(!strcmp(u, "default") && !strcmp(pw, "fromfile"), "alone: the default user's");
    chmod(f, 0640);
    snprintf(url, sizeof url, "clickhouse://bob@127.0.0.1/db?password_file=%s", f);
    ok(open_ch(url, u, pw, &e) < 0 && strstr(e.msg, "chmod 600") && !strstr(e.msg, "fromfile"),
       "a file others may read is refused: %s", e.msg);
    chmod(f, 0400);
    is_int(open_ch(url, u, pw, &e), 0, "0400 is fine");
    snprintf(url, sizeof url, "clickhouse://bob@127.0.0.1/db?password_file=%s", in_scratch("none"));
    ok(open_ch(url, u, pw, &e) < 0 && e.code == FLAME_EXIT_USAGE && strstr(e.msg, "none"),
       "a missing file: %s", e.msg);
    snprintf(url, sizeof url, "clickhouse://bob@127.0.0.1/db?password_file=%s", scratch);
    ok(open_ch(url, u, pw, &e) < 0 && strstr(e.msg, "not a file"), "a directory: %s", e.msg);
    fp = fopen(in_scratch("long"), "w");
    for (int i = 0; i < 200; i++)
        fputc('x', fp);
    fclose(fp);
    chmod(in_scratch("long"), 0600);
    snprintf(url, sizeof url, "clickhouse://bob@127.0.0.1/db?password_file=%s", in_scratch("long"));
    ok(open_ch(url, u, pw, &e) < 0 && strstr(e.msg, "longer than"), "too long: %s", e.msg);
    unsetenv("DOCKER_FLAME_STORE_PASSWORD");
}

static void test_scrub(void)
{
    char argv_area[] = "clickhouse://alice:S3cretPw@host:8123/db?spool=/x\0next-arg";
    size_t len = strlen(argv_area);
    is_int(store_url_scrub(argv_area), 1, "a password in argv is overwritten");
    is_str(argv_area, "clickhouse://alice:*@host:8123/db?spool=/x", "with one '*'");
    bool zero = true;
    for (size_t i = strlen(argv_area); i < len; i++)
        zero &= argv_area[i] == 0;
    ok(zero && !memcmp(argv_area + len + 1, "next-arg", 8),
       "the bytes it freed are zeroed, the next argument is untouched");
    char once[] = "clickhouse://alice:*@host/db";
    is_int(store_url_scrub(once), 1, "scrubbing twice changes nothing more");
    is_str(once, "clickhouse://alice:*@host/db", "still one '*'");
    static const char *const same[] = {"clickhouse://alice@host/db", "clickhouse://host/db",
                                       "clickhouse://alice:@host/db", "/data/a:b@c.db",
                                       "sqlite:///a:b@c.db"};
    for (size_t i = 0; i < sizeof same / sizeof *same; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "%s", same[i]);
        ok(store_url_scrub(buf) == 0 && !strcmp(buf, same[i]), "no password: unchanged (%s)",
           same[i]);
    }
}

static void test_absolute(void)
{
    static const char *const cases[][2] = {
        {"rel.db", "/home/u/rel.db"},
        {"./d/rel.db", "/home/u/./d/rel.db"},
        {"/abs.db", "/abs.db"},
        {"sqlite://rel.db", "sqlite:///home/u/rel.db"},
        {"sqlite:///abs.db", "sqlite:///abs.db"},
        {"sqlite://", "sqlite://"},
        {"clickhouse://h/db", "clickhouse://h/db"},
        {"clickhouse://h/db?spool=sp.db", "clickhouse://h/db?spool=/home/u/sp.db"},
        {"clickhouse://u:p@h:1/db?spool_max=1M&spool=sp.db&password_file=pw",
         "clickhouse://u:p@h:1/db?spool_max=1M&spool=/home/u/sp.db&password_file=/home/u/pw"},
        {"clickhouse://h/db?spool=off", "clickhouse://h/db?spool=off"},
        {"clickhouse://h/db?spool=/abs.db&password_file=%2Fpw",
         "clickhouse://h/db?spool=/abs.db&password_file=%2Fpw"},
        {"clickhouses://h?spool=a%20b", "clickhouses://h?spool=/home/u/a%20b"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *out = NULL;
        int rc = store_url_absolute(cases[i][0], "/home/u", &out);
        ok(rc == 0 && out && !strcmp(out, cases[i][1]), "%s -> %s", cases[i][0],
           out ? out : "(null)");
        free(out);
    }
    char *out = NULL;
    store_url_absolute("clickhouse://h/db?spool=sp.db", "/home/a b&c", &out);
    is_str(out, "clickhouse://h/db?spool=/home/a%20b%26c/sp.db", "the directory is %%XX-encoded");
    free(out);
    /* what the spool then opens */
    store *s = NULL;
    flame_err e = FLAME_ERR_INIT;
    store_url_absolute("clickhouse://h/db?spool=sp.db", "/home/a b&c", &out);
    ok(store_open(out, &s, &e) == 0 && !strcmp(s->spool_path, "/home/a b&c/sp.db"),
       "and the spool is that file");
    store_close(s);
    free(out);
    ok(store_url_absolute(NULL, "/x", &out) == 0 && !out, "no URL: none (the default store)");
}

int main(void)
{
    scratch_make();
    setenv("XDG_DATA_HOME", scratch, 1);
    test_messages();
    test_password_sources();
    test_scrub();
    test_absolute();
    scratch_remove();
    return tap_done();
}
