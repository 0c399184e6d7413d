/* SPDX-License-Identifier: BSD-3-Clause */
/* store_open: the scheme table that maps the configuration to a store backend, and store_open.
 * The only file that knows every backend: store.c links none of them. */
#include "store_backend.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "engine.h"
#include "store.h"
#include "store_mem.h"
#include "store_pg.h"
#include "store_sqlite.h"

/* struct scheme is one way to name a backend in the configuration. */
struct scheme {
    const char *prefix;                  /* --store=PREFIX LOCATION */
    const char *queue_type;              /* gearmand's -q TYPE for it, or NULL */
    const struct store_backend *backend; /* the implementation */
    size_t loc_opt;                      /* offsetof the config field of -q TYPE's location */
    size_t table_opt;                    /* offsetof the config field of -q TYPE's table */
    int loc_required;                    /* 1: no store without that location */
};

/* The table. mem: is the in-memory test backend (store_mem.h): config.c's --store accepts only
 * sqlite: and postgres:, so only tests that fill a struct config themselves reach it. */
static const struct scheme schemes[] = {
    {"sqlite:", "libsqlite3", &store_sqlite_backend, offsetof(struct config, sqlite_db),
     offsetof(struct config, sqlite_table), 1},
    {"postgres:", "Postgres", &store_pg_backend, offsetof(struct config, pg_conninfo),
     offsetof(struct config, pg_table), 0},
    {"mem:", NULL, &store_mem_backend, 0, 0, 0},
};

/* opt reads the string option at offset off of c. */
static const char *opt(const struct config *c, size_t off)
{
    return *(char *const *)(const void *)((const char *)c + off);
}

const struct store_backend *store_backend_choose(const struct config *c, struct store_params *p)
{
    memset(p, 0, sizeof *p);
    p->sync_normal = c->store_sync_normal;
    p->wait = c->store_wait;
    p->timeout = c->store_timeout;
    p->max_function = c->max_function;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++) {
        const struct scheme *s = &schemes[i];
        size_t n = strlen(s->prefix);
        if (c->store != NULL && strncmp(c->store, s->prefix, n) == 0) {
            p->location = c->store + n;
            return s->backend;
        }
        if (c->store == NULL && s->queue_type != NULL && c->queue_type != NULL &&
            strcasecmp(c->queue_type, s->queue_type) == 0) {
            /* gearmand's options: --libsqlite3-db and --libsqlite3-table, --libpq-conninfo and
             * --libpq-table are the only -q location options spurd takes */
            p->location = opt(c, s->loc_opt);
            p->import_table = opt(c, s->table_opt);
            p->gearmand = 1;
            if (p->location == NULL && !s->loc_required)
                p->location = "";
            return p->location != NULL ? s->backend : NULL;
        }
    }
    return NULL;
}

const struct store_backend *store_backend_params(const struct config *c, struct store_params *p)
{
    const struct store_backend *b = store_backend_choose(c, p);
    if (b != NULL && b->params != NULL)
        p->own = b->params(c, p);
    return b;
}

int store_open(struct engine *e, const struct store_sink *sink, void (*notify)(void *arg), void *arg,
               char *err, size_t errlen)
{
    struct store_params p;
    const struct store_backend *b = store_backend_params(e->cfg, &p);
    if (b == NULL)
        return 0;
    return store_start(e, b, &p, sink, notify, arg, err, errlen);
}
