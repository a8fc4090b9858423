/* Where the engine is: Docker's global flags (the CLI hands a plugin its whole argv) and the
 * resolution of the endpoint exactly like the docker CLI does it (--context > -H/DOCKER_HOST >
 * DOCKER_CONTEXT > currentContext in config.json > default). Pure code: no engine access. */
#pragma once
#include <stdbool.h>

#include "common/err.h"

/* Docker's global flags as given before the plugin's name. Strings point into argv. */
typedef struct ep_globals {
    const char *host;       /* -H/--host (docker accepts several; the last one wins here) */
    const char *context;    /* -c/--context */
    const char *config_dir; /* --config */
    int tls, tlsverify;     /* -1 unset, 0 or 1 */
    const char *tlscacert, *tlscert, *tlskey;
    bool debug;
    const char *log_level;
} ep_globals;

/* A resolved endpoint. All strings owned (ep_endpoint_clear frees them). */
typedef struct ep_endpoint {
    char *context;    /* "default" or a context name */
    char *host;       /* unix:///p, tcp://h:p, ssh://..., with a scheme always */
    char *config_dir; /* the docker config dir in effect */
    bool tls, tls_verify;
    char *ca, *cert, *key; /* PEM files, NULL when not used */
} ep_endpoint;

void ep_globals_init(ep_globals *g);
/* Parse Docker's global flags from argv[1..]; stops at the first non-flag word (the plugin name
 * "flame", or "help"). *next = its index (argc when there is none). */
int ep_parse_globals(int argc, char **argv, ep_globals *g, int *next, flame_err *err);
/* Resolve against the environment (DOCKER_HOST, DOCKER_CONTEXT, DOCKER_CONFIG, DOCKER_TLS_VERIFY,
 * DOCKER_CERT_PATH, HOME) and the config dir. */
int ep_resolve(const ep_globals *g, ep_endpoint *out, flame_err *err);
void ep_endpoint_clear(ep_endpoint *ep);
/* "x" -> lowercase hex sha256 (65 bytes incl. NUL): the context store's directory name. */
void ep_context_dir_name(const char *name, char out[65]);
