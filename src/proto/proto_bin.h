/* SPDX-License-Identifier: BSD-3-Clause */
/* proto_bin: the pure framing parser for binary Gearman packets. No I/O, no allocation. */
#ifndef SPUR_PROTO_BIN_H
#define SPUR_PROTO_BIN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#ifdef __cplusplus
extern "C" {
#endif

/* enum pb_status is the result of pb_parse. */
enum pb_status {
    PB_OK = 0,      /* a complete, well-formed packet is in *pkt; skip *consumed bytes */
    PB_NEED_MORE,   /* the bytes so far are a valid prefix; nothing consumed */
    PB_BAD_MAGIC,   /* the first bytes are not a Gearman magic: framing is lost, close */
    PB_WRONG_MAGIC, /* a complete packet with the other side's magic; skip *consumed bytes */
    PB_TOO_LARGE,   /* the header declares a body over max_body: pkt->cmd and pkt->size are set,
                       *consumed is the 12 header bytes; the caller discards pkt->size more bytes */
    PB_BAD_COMMAND, /* a complete packet whose command is not 1..42; skip *consumed bytes */
    PB_BAD_ARGS,    /* a complete packet whose body lacks the NULs its command needs; skip *consumed */
};

/* struct pb_packet is one parsed packet; every pointer borrows from the parsed buffer. */
struct pb_packet {
    uint32_t magic;                    /* PROTO_MAGIC_REQ or PROTO_MAGIC_RES */
    uint32_t cmd;                      /* command number as sent (any 32-bit value) */
    uint32_t size;                     /* declared body size */
    const struct proto_cmd *info;      /* table entry, NULL if cmd is unknown */
    int argc;                          /* arguments split out (info->argc on PB_OK) */
    const char *arg[PROTO_MAX_ARGS];   /* argument i, not NUL-terminated in general */
    uint32_t len[PROTO_MAX_ARGS];      /* length of argument i */
    const char *data;                  /* data tail for has_data commands, else NULL */
    uint32_t data_len;                 /* length of the data tail */
};

/* pb_parse parses the packet at the start of buf[0..n).
 * want_magic is the magic this side accepts (PROTO_MAGIC_REQ on the server); max_body bounds the
 * declared body size and is checked from the header before any body byte is needed.
 * Returns a pb_status; *consumed is set for every status but PB_NEED_MORE and PB_BAD_MAGIC. */
enum pb_status pb_parse(const char *buf, size_t n, uint32_t want_magic, uint32_t max_body,
                        struct pb_packet *pkt, size_t *consumed);

/* pb_status_name returns a short name for st, for logs and tests. */
const char *pb_status_name(enum pb_status st);

#ifdef __cplusplus
}
#endif
#endif
