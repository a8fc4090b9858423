/* Helpers shared by the profile/render unit tests: load text into a profile, render to a
 * string, check XML well-formedness with a real parser (xmllint, else python3). */
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flame/profile.h"
#include "flame/render.h"
#include "flame/speedscope.h"
#include "tests/unit/tap.h"

static profile *load_text(const char *text, size_t len, flame_err *err)
{
    profile *p = profile_new();
    FILE *f = fmemopen((void *)text, len, "r");
    if (!p || !f || profile_load(p, f, "input", err) < 0) {
        if (f)
            fclose(f);
        profile_free(p);
        return NULL;
    }
    fclose(f);
    return p;
}

__attribute__((unused)) static profile *load_str(const char *text)
{
    flame_err err = FLAME_ERR_INIT;
    profile *p = load_text(text, strlen(text), &err);
    if (!p)
        printf("# load failed: %s\n", err.msg);
    return p;
}

/* What a writer puts into a FILE, as a malloc'd string (NULL when it fails; *len its size). The
 * writers: profile_write_folded (arg unused), render_svg (arg: render_opts), speedscope_export
 * (arg: the name), through the adapters below; tests add their own. */
typedef int (*out_fn)(const void *obj, const void *arg, FILE *out, flame_err *err);

__attribute__((unused)) static char *out_str(out_fn fn, const void *obj, const void *arg,
                                             size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    flame_err err = FLAME_ERR_INIT;
    int rc = f ? fn(obj, arg, f, &err) : -1;
    if (f)
        fclose(f);
    if (rc < 0) {
        printf("# writing failed: %s\n", err.msg);
        free(buf);
        return NULL;
    }
    if (len)
        *len = n;
    return buf;
}

__attribute__((unused)) static int out_folded(const void *p, const void *arg, FILE *out,
                                              flame_err *err)
{
    (void)arg;
    return profile_write_folded(p, out, err);
}

__attribute__((unused)) static int out_svg(const void *p, const void *o, FILE *out, flame_err *err)
{
    return render_svg(p, o, out, err);
}

__attribute__((unused)) static int out_speedscope(const void *p, const void *name, FILE *out,
                                                  flame_err *err)
{
    return speedscope_export(p, name, out, err);
}

/* Render to a malloc'd string (NULL on error; *len its size). */
__attribute__((unused)) static char *render_str(const profile *p, const render_opts *o, size_t *len)
{
    return out_str(out_svg, p, o, len);
}

static char *write_tmp(const char *data, size_t n, const char *suffix)
{
    static char path[256];
    snprintf(path, sizeof path, "/tmp/flame-test-XXXXXX%s", suffix);
    int fd = mkstemps(path, (int)strlen(suffix));
    if (fd < 0)
        return NULL;
    if (write(fd, data, n) != (ssize_t)n) {
        close(fd);
        return NULL;
    }
    close(fd);
    return path;
}

/* 1 if data parses as XML with a real parser. */
__attribute__((unused)) static int xml_well_formed(const char *data, size_t n)
{
    char *path = write_tmp(data, n, ".svg");
    if (!path)
        return 0;
    char cmd[512];
    if (system("command -v xmllint >/dev/null 2>&1") == 0)
        snprintf(cmd, sizeof cmd, "xmllint --noout --nonet --huge '%s'", path);
    else
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '%s'",
                 path);
    int rc = system(cmd);
    unlink(path);
    return rc == 0;
}

__attribute__((unused)) static size_t count_str(const char *hay, const char *needle)
{
    size_t n = 0, l = strlen(needle);
    for (const char *q = hay; (q = strstr(q, needle)); q += l)
        n++;
    return n;
}

/* The fill of the frame whose title starts with `title` ("name (" ...), as r,g,b; 0 if found. */
__attribute__((unused)) static int frame_fill(const char *svg, const char *title, unsigned *r,
                                              unsigned *g, unsigned *b)
{
    char key[512];
    snprintf(key, sizeof key, "<title>%s", title);
    const char *q = strstr(svg, key);
    if (!q)
        return -1;
    q = strstr(q, "fill=\"rgb(");
    if (!q || sscanf(q, "fill=\"rgb(%u,%u,%u)", r, g, b) != 3)
        return -1;
    return 0;
}
