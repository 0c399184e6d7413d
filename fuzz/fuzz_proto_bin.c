/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_proto_bin: feeds arbitrary bytes to pb_parse the way peer.c consumes a connection's input
 * (packet after packet, discarding oversize bodies) and checks the documented return contract
 * of every call: what is consumed, where the arguments lie, how many there are.
 *
 * Input: byte 0 picks max_body (an 8-bit, 16-bit or 32-bit value from the next bytes, or the
 * 64 MiB default) and the accepted magic; the rest is the byte stream. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_util.h"
#include "proto.h"
#include "proto_bin.h"

/* needed_nuls returns how many NUL-terminated arguments command c has. */
static int needed_nuls(const struct proto_cmd *c)
{
    return c->has_data ? c->argc : (c->argc > 0 ? c->argc - 1 : 0);
}

/* count_nuls counts NUL bytes in p[0..n). */
static size_t count_nuls(const char *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += p[i] == '\0';
    return k;
}

/* is_magic_prefix reports whether buf[0..n) (n <= 4) starts one of the two magics. */
static int is_magic_prefix(const char *buf, size_t n)
{
    return memcmp(buf, "\0REQ", n) == 0 || memcmp(buf, "\0RES", n) == 0;
}

/* volatile sink so reads of argument bytes are not optimised away */
static volatile unsigned sink;

/* touch reads every byte of p[0..n): AddressSanitizer reports any byte outside the buffer. */
static void touch(const char *p, size_t n)
{
    unsigned s = 0;
    for (size_t i = 0; i < n; i++)
        s += (unsigned char)p[i];
    sink += s;
}

/* check_ok verifies a PB_OK packet: arguments split inside the frame exactly as the table says. */
static void check_ok(const char *buf, const struct pb_packet *pkt, size_t consumed)
{
    const struct proto_cmd *c = pkt->info;
    const char *body = buf + PROTO_HEADER_SIZE;
    const char *end = buf + consumed;
    FUZZ_CHECK(c != NULL && c->id == pkt->cmd, "info for cmd %u", pkt->cmd);
    FUZZ_CHECK((pkt->cmd >= 1 && pkt->cmd < CMD_MAX) ||
                   (pkt->cmd > CMD_SPUR_BASE && pkt->cmd < CMD_SPUR_END),
               "cmd %u accepted", pkt->cmd);
    FUZZ_CHECK(pkt->argc == c->argc, "argc %d, table says %d", pkt->argc, c->argc);
    FUZZ_CHECK(pkt->argc <= PROTO_MAX_ARGS, "argc %d", pkt->argc);
    int term = needed_nuls(c);
    const char *p = body;
    for (int i = 0; i < term; i++) {
        FUZZ_CHECK(pkt->arg[i] == p, "argument %d does not follow the previous one", i);
        FUZZ_CHECK(pkt->arg[i] + pkt->len[i] < end, "argument %d runs past the frame", i);
        FUZZ_CHECK(memchr(pkt->arg[i], '\0', pkt->len[i]) == NULL, "NUL inside argument %d", i);
        FUZZ_CHECK(pkt->arg[i][pkt->len[i]] == '\0', "argument %d not NUL-terminated", i);
        touch(pkt->arg[i], pkt->len[i]);
        p = pkt->arg[i] + pkt->len[i] + 1;
    }
    if (c->has_data) {
        FUZZ_CHECK(pkt->data == p, "data tail does not follow the arguments");
        FUZZ_CHECK(pkt->data + pkt->data_len == end, "data tail does not end the frame");
        touch(pkt->data, pkt->data_len);
    } else {
        FUZZ_CHECK(pkt->data == NULL && pkt->data_len == 0, "data on a no-data command");
        if (c->argc > 0) {
            int last = c->argc - 1;
            FUZZ_CHECK(pkt->arg[last] == p, "last argument does not follow the others");
            FUZZ_CHECK(pkt->arg[last] + pkt->len[last] == end, "last argument does not end the frame");
            touch(pkt->arg[last], pkt->len[last]);
        }
    }
    for (int i = c->argc; i < PROTO_MAX_ARGS; i++)
        FUZZ_CHECK(pkt->arg[i] == NULL && pkt->len[i] == 0, "argument %d set beyond argc", i);
}

/* reparse_exact parses the complete frame again from an allocation of exactly its size, so any
 * read past the frame is an AddressSanitizer report, and checks the result is the same. */
static void reparse_exact(const char *buf, size_t consumed, uint32_t want, uint32_t max_body,
                          enum pb_status st, const struct pb_packet *pkt)
{
    char *copy = malloc(consumed);
    FUZZ_CHECK(copy != NULL, "malloc");
    memcpy(copy, buf, consumed);
    struct pb_packet again;
    size_t used = 0;
    enum pb_status st2 = pb_parse(copy, consumed, want, max_body, &again, &used);
    FUZZ_CHECK(st2 == st, "%s on the exact frame, %s with more bytes after it",
               pb_status_name(st2), pb_status_name(st));
    FUZZ_CHECK(used == consumed, "consumed %zu vs %zu", used, consumed);
    FUZZ_CHECK(again.cmd == pkt->cmd && again.size == pkt->size && again.argc == pkt->argc,
               "fields differ on re-parse");
    for (int i = 0; i < pkt->argc; i++)
        FUZZ_CHECK(again.arg[i] - copy == pkt->arg[i] - buf && again.len[i] == pkt->len[i],
                   "argument %d moved on re-parse", i);
    if (st == PB_OK)
        check_ok(copy, &again, used);
    /* every strict prefix of a complete frame is a valid prefix: NEED_MORE, never consumed */
    size_t cuts[3] = {consumed - 1, consumed / 2, consumed > 12 ? 12 : 0};
    for (int k = 0; k < 3; k++) {
        if (cuts[k] >= consumed)
            continue;
        size_t u2 = 12345;
        enum pb_status st3 = pb_parse(copy, cuts[k], want, max_body, &again, &u2);
        FUZZ_CHECK(st3 == PB_NEED_MORE, "prefix of %zu/%zu bytes gives %s", cuts[k], consumed,
                   pb_status_name(st3));
        FUZZ_CHECK(u2 == 12345, "NEED_MORE wrote *consumed");
    }
    free(copy);
}

/* check_one checks the result of one pb_parse call on buf[0..n). Returns bytes to skip, or 0 to
 * stop (need more input, or framing lost). *discard gets an oversize body's length. */
static size_t check_one(const char *buf, size_t n, uint32_t want, uint32_t max_body,
                        uint64_t *discard)
{
    struct pb_packet pkt;
    size_t consumed = 987654321; /* a canary: statuses that set nothing must leave it */
    enum pb_status st = pb_parse(buf, n, want, max_body, &pkt, &consumed);
    uint32_t hcmd = n >= 8 ? proto_get32(buf + 4) : 0;
    uint32_t hsize = n >= 12 ? proto_get32(buf + 8) : 0;
    uint32_t magic = n >= 4 ? proto_get32(buf) : 0;
    switch (st) {
    case PB_NEED_MORE:
        FUZZ_CHECK(consumed == 987654321, "NEED_MORE set *consumed");
        if (n < 4) {
            FUZZ_CHECK(is_magic_prefix(buf, n), "NEED_MORE on a non-magic prefix");
        } else {
            FUZZ_CHECK(magic == PROTO_MAGIC_REQ || magic == PROTO_MAGIC_RES, "NEED_MORE, bad magic");
            if (n >= PROTO_HEADER_SIZE) {
                FUZZ_CHECK(hsize <= max_body, "NEED_MORE for an oversize body");
                FUZZ_CHECK(n < PROTO_HEADER_SIZE + (size_t)hsize, "NEED_MORE with the whole frame");
            }
        }
        return 0;
    case PB_BAD_MAGIC:
        FUZZ_CHECK(consumed == 987654321, "BAD_MAGIC set *consumed");
        FUZZ_CHECK(!is_magic_prefix(buf, n < 4 ? n : 4), "BAD_MAGIC on a good magic");
        return 0;
    case PB_TOO_LARGE:
        FUZZ_CHECK(n >= PROTO_HEADER_SIZE, "TOO_LARGE before the header is complete");
        FUZZ_CHECK(consumed == PROTO_HEADER_SIZE, "TOO_LARGE consumed %zu", consumed);
        FUZZ_CHECK(pkt.size == hsize && pkt.cmd == hcmd && pkt.magic == magic, "header fields");
        FUZZ_CHECK(hsize > max_body, "TOO_LARGE for %u <= %u", hsize, max_body);
        *discard = hsize;
        return consumed;
    case PB_WRONG_MAGIC:
    case PB_BAD_COMMAND:
    case PB_BAD_ARGS:
    case PB_OK:
        break;
    default:
        FUZZ_CHECK(0, "unknown status %d", (int)st);
    }
    /* every status from here on describes one complete frame */
    FUZZ_CHECK(n >= PROTO_HEADER_SIZE, "%s on a partial header", pb_status_name(st));
    FUZZ_CHECK(consumed == PROTO_HEADER_SIZE + (size_t)hsize, "consumed %zu for size %u", consumed,
               hsize);
    FUZZ_CHECK(consumed <= n, "consumed %zu > %zu", consumed, n);
    FUZZ_CHECK(hsize <= max_body, "frame over max_body accepted");
    FUZZ_CHECK(pkt.cmd == hcmd && pkt.size == hsize && pkt.magic == magic, "header fields");
    const struct proto_cmd *info = hcmd == CMD_TEXT ? NULL : proto_cmd_info(hcmd);
    FUZZ_CHECK(pkt.info == info, "info pointer");
    switch (st) {
    case PB_WRONG_MAGIC:
        FUZZ_CHECK(magic != want, "WRONG_MAGIC on the wanted magic");
        break;
    case PB_BAD_COMMAND:
        FUZZ_CHECK(magic == want, "BAD_COMMAND before the magic check");
        FUZZ_CHECK(info == NULL, "BAD_COMMAND for known command %u", hcmd);
        break;
    case PB_BAD_ARGS:
        FUZZ_CHECK(magic == want && info != NULL, "BAD_ARGS order");
        FUZZ_CHECK(count_nuls(buf + PROTO_HEADER_SIZE, hsize) < (size_t)needed_nuls(info),
                   "BAD_ARGS but the body has the NULs %s needs", info->name);
        break;
    case PB_OK:
        FUZZ_CHECK(magic == want, "OK with the wrong magic");
        FUZZ_CHECK(count_nuls(buf + PROTO_HEADER_SIZE, hsize) >= (size_t)needed_nuls(info),
                   "OK without enough NULs");
        check_ok(buf, &pkt, consumed);
        break;
    default:
        break;
    }
    reparse_exact(buf, consumed, want, max_body, st, &pkt);
    return consumed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    uint8_t mode = rd_u8(&r);
    uint32_t max_body;
    switch (mode & 3) {
    case 0: max_body = rd_u8(&r); break;
    case 1: max_body = rd_u16(&r); break;
    case 2: max_body = rd_u32(&r); break;
    default: max_body = 64u << 20; break;
    }
    uint32_t want = (mode & 4) ? PROTO_MAGIC_RES : PROTO_MAGIC_REQ;
    size_t n;
    const char *buf = (const char *)rd_bytes(&r, rd_left(&r), &n);

    /* consume the stream as peer.c does: packets back to back, oversize bodies discarded */
    size_t off = 0;
    while (off < n) {
        uint64_t discard = 0;
        size_t used = check_one(buf + off, n - off, want, max_body, &discard);
        if (used == 0)
            break;
        FUZZ_CHECK(used <= n - off, "consumed past the input");
        off += used;
        if (discard > 0) {
            size_t d = discard < n - off ? (size_t)discard : n - off;
            off += d;
        }
    }
    return 0;
}
