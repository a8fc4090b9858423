/* Unit tests for `docker flame render` (flame_cmd_render): exit codes, one-line errors, --help,
 * formats, -o written atomically. Each call runs in a child with stdin/stdout/stderr on files. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plugin/cmd.h"
#include "tests/unit/render_test_util.h"
#include "tests/unit/tap.h"

static char out_path[] = "/tmp/flame-cli-out-XXXXXX", err_path[] = "/tmp/flame-cli-err-XXXXXX";
static char *out_buf, *err_buf;
static size_t out_len;

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            buf = realloc(buf, cap);
        }
        size_t r = fread(buf + n, 1, 4096, f);
        n += r;
        if (r == 0)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

/* Run flame_cmd_render(args) with `input` on stdin; returns the exit code. */
static int run(const char *input, const char *const *args)
{
    char in_path[] = "/tmp/flame-cli-in-XXXXXX";
    int in = mkstemp(in_path);
    if (in < 0 || write(in, input, strlen(input)) != (ssize_t)strlen(input))
        return -1;
    close(in);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        int i = open(in_path, O_RDONLY), o = open(out_path, O_WRONLY | O_TRUNC),
            e = open(err_path, O_WRONLY | O_TRUNC);
        dup2(i, 0), dup2(o, 1), dup2(e, 2);
        char *argv[32];
        int argc = 0;
        argv[argc++] = "render";
        for (; args[argc - 1] && argc < 31; argc++)
            argv[argc] = (char *)args[argc - 1];
        argv[argc] = NULL;
        int rc = flame_cmd_render(argc, argv);
        fflush(stdout);
        _exit(rc);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    unlink(in_path);
    free(out_buf);
    free(err_buf);
    out_buf = slurp(out_path, &out_len);
    err_buf = slurp(err_path, NULL);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int one_line(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && s[n - 1] == '\n' && memchr(s, '\n', n - 1) == NULL;
}

int main(void)
{
    close(mkstemp(out_path));
    close(mkstemp(err_path));
    const char *folded = "main;work 3\nmain;idle 1\n";

    is_int(run(folded, (const char *[]){NULL}), 0, "stdin to SVG: exit 0");
    ok(out_buf && xml_well_formed(out_buf, out_len) && strstr(out_buf, "<title>work (3 samples"),
       "SVG on stdout");

    is_int(run("", (const char *[]){"--help", NULL}), 0, "--help exits 0");
    ok(out_buf && strstr(out_buf, "Usage:  docker flame render") && strstr(out_buf, "--minwidth") &&
           strstr(out_buf, "Examples:"),
       "--help teaches usage, options and examples");

    is_int(run(folded, (const char *[]){"--bogus", NULL}), 2, "unknown option: exit 2");
    ok(one_line(err_buf) && strstr(err_buf, "docker flame render: unknown flag: --bogus"),
       "one clear line for a usage error");
    is_int(run(folded, (const char *[]){"--width", "abc", NULL}), 2, "bad --width: exit 2");
    ok(one_line(err_buf) && strstr(err_buf, "--width: \"abc\""), "names the option and value");
    is_int(run(folded, (const char *[]){"--colors", "pink", NULL}), 2, "bad palette: exit 2");
    is_int(run(folded, (const char *[]){"--format", "png", NULL}), 2, "bad format: exit 2");
    is_int(run(folded, (const char *[]){"--minwidth", "5%x", NULL}), 2, "bad minwidth: exit 2");
    is_int(run(folded, (const char *[]){"a", "b", NULL}), 2, "two inputs: exit 2");

    is_int(run("main;x\n", (const char *[]){NULL}), 1, "bad input: exit 1");
    ok(one_line(err_buf) && strstr(err_buf, "docker flame render: <stdin>: line 1: no count"),
       "bad input error names the input and line");
    is_int(run("", (const char *[]){NULL}), 1, "empty input: exit 1");
    ok(one_line(err_buf) && strstr(err_buf, "no stacks"), "empty input explained");
    is_int(run("", (const char *[]){"/nonexistent/f", NULL}), 1, "missing file: exit 1");
    ok(one_line(err_buf) && strstr(err_buf, "/nonexistent/f: No such file"), "missing file named");

    /* flamegraph.pl style single-dash long options */
    is_int(run(folded, (const char *[]){"-title", "Single", "--minwidth=0.5%", "-i", NULL}), 0,
           "-title and --opt=value forms");
    ok(out_buf && strstr(out_buf, ">Single</text>") && strstr(out_buf, "y=\"36.0\""),
       "title and inverted applied");

    is_int(run(folded, (const char *[]){"--format", "folded", NULL}), 0, "--format folded");
    is_str(out_buf, "main;idle 1\nmain;work 3\n", "folded output");
    is_int(run(folded, (const char *[]){"--format", "speedscope", NULL}), 0, "--format speedscope");
    ok(out_buf && strstr(out_buf, "\"type\":\"sampled\"") && strstr(out_buf, "\"name\":\"stdin\""),
       "speedscope JSON named after the input");

    /* render -> SVG file (-o) -> folded again */
    char svg_path[] = "/tmp/flame-cli-svg-XXXXXX";
    close(mkstemp(svg_path));
    is_int(run(folded, (const char *[]){"-o", svg_path, NULL}), 0, "-o FILE");
    ok(out_len == 0, "nothing on stdout with -o");
    is_int(run("", (const char *[]){"--format", "folded", svg_path, NULL}), 0, "SVG read back");
    is_str(out_buf, "main;idle 1\nmain;work 3\n", "SVG -> folded round trip through the CLI");
    is_int(run("junk\n", (const char *[]){"-o", svg_path, NULL}), 1, "failed render with -o");
    size_t n;
    char *kept = slurp(svg_path, &n);
    ok(kept && strstr(kept, "<title>work (3 samples"), "a failed render leaves the old file");
    free(kept);
    unlink(svg_path);

    is_int(run("a;b 1 2\na;c 3 1\n", (const char *[]){"--negate", NULL}), 0, "differential input");
    ok(out_buf && strstr(out_buf, "<title>b (2 samples, 66.67%; -33.33%)"),
       "differential tooltip, negated");

    unlink(out_path);
    unlink(err_path);
    free(out_buf);
    free(err_buf);
    return tap_done();
}
