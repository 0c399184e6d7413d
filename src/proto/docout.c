/* SPDX-License-Identifier: BSD-3-Clause */
/* docout: see docout.h. */
#include "docout.h"

#include <jansson.h>

struct docout docout_init(struct buf *b, size_t max)
{
    struct docout o = {b, 0, buf_len(b), max};
    return o;
}

void docout_put(struct docout *o, const char *s, size_t n)
{
    if (o->err)
        return;
    if (o->max != 0 && buf_len(o->b) - o->start + n > o->max)
        o->err = DOCOUT_TOO_LARGE;
    else if (n > 0 && buf_append(o->b, s, n) != 0)
        o->err = DOCOUT_NO_MEMORY;
}

/* dump_cb is jansson's writer: into the document. */
static int dump_cb(const char *s, size_t n, void *arg)
{
    struct docout *o = arg;
    docout_put(o, s, n);
    return o->err ? -1 : 0;
}

void docout_json(struct docout *o, struct json_t *v, int precision)
{
    if (v == NULL) {
        if (!o->err)
            o->err = DOCOUT_NO_MEMORY;
        return;
    }
    size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(precision);
    if (!o->err && json_dump_callback(v, dump_cb, o, flags) != 0 && !o->err)
        o->err = DOCOUT_NO_MEMORY;
    json_decref(v);
}
