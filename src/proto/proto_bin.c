/* SPDX-License-Identifier: BSD-3-Clause */
/* proto_bin: the pure framing parser for binary Gearman packets. */
#include "proto_bin.h"

#include <string.h>

/* split_args fills pkt's arguments from the body, as the command table says.
 * Returns 0, or -1 when a NUL-terminated argument is missing its NUL. */
static int split_args(struct pb_packet *pkt, const char *body, uint32_t size)
{
    const struct proto_cmd *c = pkt->info;
    int terminated = c->has_data ? c->argc : (c->argc > 0 ? c->argc - 1 : 0);
    const char *p = body;
    uint32_t left = size;

    for (int i = 0; i < terminated; i++) {
        const char *nul = memchr(p, '\0', left);
        if (nul == NULL)
            return -1;
        pkt->arg[i] = p;
        pkt->len[i] = (uint32_t)(nul - p);
        left -= pkt->len[i] + 1;
        p = nul + 1;
    }
    pkt->argc = c->argc;
    if (c->has_data) {
        pkt->data = p;
        pkt->data_len = left;
    } else if (c->argc > 0) {
        pkt->arg[c->argc - 1] = p;
        pkt->len[c->argc - 1] = left;
    }
    return 0;
}

/* magic_prefix_ok reports whether the first n (< 4) bytes can start a Gearman magic. */
static int magic_prefix_ok(const char *buf, size_t n)
{
    static const char req[4] = {'\0', 'R', 'E', 'Q'};
    static const char res[4] = {'\0', 'R', 'E', 'S'};
    return memcmp(buf, req, n) == 0 || memcmp(buf, res, n) == 0;
}

enum pb_status pb_parse(const char *buf, size_t n, uint32_t want_magic, uint32_t max_body,
                        struct pb_packet *pkt, size_t *consumed)
{
    memset(pkt, 0, sizeof *pkt);
    if (n < 4)
        return magic_prefix_ok(buf, n) ? PB_NEED_MORE : PB_BAD_MAGIC;
    uint32_t magic = proto_get32(buf);
    if (magic != PROTO_MAGIC_REQ && magic != PROTO_MAGIC_RES)
        return PB_BAD_MAGIC;
    if (n < PROTO_HEADER_SIZE)
        return PB_NEED_MORE;

    pkt->magic = magic;
    pkt->cmd = proto_get32(buf + 4);
    pkt->size = proto_get32(buf + 8);
    pkt->info = pkt->cmd == CMD_TEXT ? NULL : proto_cmd_info(pkt->cmd);
    if (pkt->size > max_body) {
        *consumed = PROTO_HEADER_SIZE;
        return PB_TOO_LARGE;
    }
    size_t total = PROTO_HEADER_SIZE + (size_t)pkt->size;
    if (n < total)
        return PB_NEED_MORE;
    *consumed = total;
    if (magic != want_magic)
        return PB_WRONG_MAGIC;
    if (pkt->info == NULL)
        return PB_BAD_COMMAND;
    if (split_args(pkt, buf + PROTO_HEADER_SIZE, pkt->size) != 0)
        return PB_BAD_ARGS;
    return PB_OK;
}

const char *pb_status_name(enum pb_status st)
{
    switch (st) {
    case PB_OK: return "OK";
    case PB_NEED_MORE: return "NEED_MORE";
    case PB_BAD_MAGIC: return "BAD_MAGIC";
    case PB_WRONG_MAGIC: return "WRONG_MAGIC";
    case PB_TOO_LARGE: return "TOO_LARGE";
    case PB_BAD_COMMAND: return "BAD_COMMAND";
    case PB_BAD_ARGS: return "BAD_ARGS";
    }
    return "?";
}
