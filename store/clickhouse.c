/* The ClickHouse backend of the profile store, over the HTTP interface (clickhouse_http.c): its
 * face, the ops of a handle. The tables and their versions are in clickhouse_schema.c, storing
 * windows in clickhouse_put.c, the readers in clickhouse_read.c, compaction in
 * clickhouse_compact.c; calls go one way: clickhouse.c -> {put, compact} -> read -> schema ->
 * http. SQL kept to what 18.16 and current servers both accept. Tables: docs/STORE.md. */
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

#include "store/clickhouse_impl.h"

static void ch_close(store *s)
{
    ch *c = ch_of(s);
    if (!c)
        return;
    curl_easy_cleanup(c->curl); /* NULL-safe */
    explicit_bzero(c->password, sizeof c->password);
    dict_free(&c->d);
    free(c);
}

static const struct store_ops ch_ops = {ch_put,  ch_profile, ch_timeline,
                                        ch_list, ch_compact, ch_close};

int ch_open(store *s, const char *url, flame_err *err)
{
    ch *c = calloc(1, sizeof *c);
    if (!c)
        return flame_fail(err, FLAME_EXIT_ERROR, "out of memory");
    s->impl = c;
    s->ops = &ch_ops;
    dict_init(&c->d);
    c->decode_ahead = CH_DECODE_AHEAD;
    if (ch_parse_url(s, c, url, err) < 0)
        return -1;
    /* no request yet: a recorder must start (and spool) while the server is down */
    if (!(c->curl = curl_easy_init()))
        return flame_fail(err, FLAME_EXIT_ERROR, "cannot initialise libcurl");
    return 0;
}
