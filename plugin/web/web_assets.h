/* The page of `docker flame serve`: plugin/web/ui/'s files, compiled into the plugin
 * (plugin/web/embed.sh, as flame/flame.mk embeds render.js): nothing is read from disk at run
 * time, nothing is fetched from elsewhere. */
#pragma once
#include <stddef.h>

typedef struct web_asset {
    const char *path; /* "/app.js"; "/" is index.html */
    const char *type; /* Content-Type */
    const char *data;
    size_t len;
} web_asset;

/* The file served at path (exactly: no normalisation, so no path leads elsewhere), or NULL. */
const web_asset *web_assets_find(const char *path);
