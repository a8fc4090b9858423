/* libFuzzer harness: the sidecar's parsers of /proc text the target controls — status
 * (sc_parse_status), maps (sc_maps_find_libjvm), a JDK release file (sc_parse_release), JVM
 * options (sc_flag_preserve_fp, NUL- and space-separated) — each fed the whole input in an
 * exact-size buffer, and the perf pipe-stream counter (sc_perfstream_feed) fed it in pieces.
 * `docker flame host`'s parsers (sidecar/hostproc.h) too: the cgroup key, the cgroup layout
 * from mountinfo, NSpid, the task table's line. The native-frame copies' maps line parser and
 * name check (sc_symfs_parse_line, sc_symfs_path_ok) and the build-id reader (sc_elf_build_id,
 * on the input as an ELF image). */
#include "fuzz/fuzz.h"

#include "sidecar/hostproc.h"
#include "sidecar/recorder/recorder.h"
#include "sidecar/sidecar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf = fuzz_exact(data, size);
    flame_err err = FLAME_ERR_INIT;

    sc_status st;
    memset(&st, 0x55, sizeof st);
    if (sc_parse_status(buf, size, &st, &err) == 0)
        FUZZ_ASSERT(memchr(st.name, '\0', sizeof st.name));

    char path[64];
    memset(path, 'x', sizeof path);
    if (sc_maps_find_libjvm(buf, size, path, sizeof path))
        FUZZ_ASSERT(memchr(path, '\0', sizeof path));
    char one[1] = {'x'};
    (void)sc_maps_find_libjvm(buf, size, one, sizeof one);

    char ver[8];
    memset(ver, 'x', sizeof ver);
    int major = sc_parse_release(buf, size, ver, sizeof ver);
    FUZZ_ASSERT(major >= -1);
    if (major >= 0)
        FUZZ_ASSERT(memchr(ver, '\0', sizeof ver));

    int fp = sc_flag_preserve_fp(buf, size, '\0', -1);
    FUZZ_ASSERT(fp >= -1 && fp <= 1);
    fp = sc_flag_preserve_fp(buf, size, ' ', fp);
    FUZZ_ASSERT(fp >= -1 && fp <= 1);

    char key[SC_HOST_KEY_MAX], small[70];
    memset(key, 'x', sizeof key);
    int levels = sc_host_cgroup_key(buf, size, key, sizeof key);
    FUZZ_ASSERT(levels >= -1 && levels <= SC_HOST_NEST_MAX && memchr(key, '\0', sizeof key));
    FUZZ_ASSERT(levels > 0 || !strcmp(key, "host"));
    FUZZ_ASSERT(sc_host_cgroup_key(buf, size, small, sizeof small) <= 1);
    enum sc_host_layout lay = sc_host_layout(buf, size);
    FUZZ_ASSERT(lay >= SC_CG_UNKNOWN && lay <= SC_CG_HYBRID);
    sc_host_ids ids;
    if (sc_host_parse_status(buf, size, &ids) == 0)
        FUZZ_ASSERT(ids.host && ids.levels >= 1 && ids.levels <= 32 &&
                    memchr(ids.name, '\0', sizeof ids.name));
    char id[SC_HOST_ID_LEN + 1];
    int in = sc_cgroup_innermost(buf, size, id);
    FUZZ_ASSERT(in >= -1 && in <= 1 && strlen(id) == (in == 1 ? SC_HOST_ID_LEN : 0));
    uint64_t start;
    (void)sc_host_parse_stat_start(buf, size, &start);
    sc_host_task task;
    if (sc_host_task_parse(buf, size, &task) == 0) {
        char line[512];
        FUZZ_ASSERT(sc_host_task_format(&task, line, sizeof line) > 0);
    }

    sc_symfs_map sm;
    int sr = sc_symfs_parse_line(buf, size, &sm);
    FUZZ_ASSERT(sr >= -1 && sr <= 2);
    if (sr == 1)
        FUZZ_ASSERT(memchr(sm.path, '\0', sizeof sm.path) && sc_symfs_path_ok(sm.path) &&
                    sm.path[0] == '/' && !strstr(sm.path, "/../") && !strstr(sm.path, "//"));
    char hex[2 * SC_BUILD_ID_MAX + 1];
    memset(hex, 'x', sizeof hex);
    if (sc_elf_build_id((const unsigned char *)buf, size, hex))
        FUZZ_ASSERT(strlen(hex) >= 2 && strlen(hex) % 2 == 0);
    else
        FUZZ_ASSERT(hex[0] == '\0');

    /* perf's pipe-mode stream, split at a size taken from the first byte */
    sc_perfstream ps;
    memset(&ps, 0, sizeof ps);
    size_t step = size ? (size_t)data[0] % 61 + 1 : 1;
    for (size_t i = 0; i < size; i += step)
        sc_perfstream_feed(&ps, (const unsigned char *)buf + i, size - i < step ? size - i : step);
    FUZZ_ASSERT(ps.have <= sizeof ps.hdr);
    free(buf);
    return 0;
}
