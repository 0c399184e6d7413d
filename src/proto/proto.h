/* SPDX-License-Identifier: BSD-3-Clause */
/* proto: the Gearman binary protocol's constants, command table and header codec.
 * Pure: no I/O. Shared by spurd, libgearman-compat and the benchmark. */
#ifndef SPUR_PROTO_H
#define SPUR_PROTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PROTO_HEADER_SIZE 12
#define PROTO_MAGIC_REQ 0x00524551u /* "\0REQ" */
#define PROTO_MAGIC_RES 0x00524553u /* "\0RES" */
#define PROTO_MAX_ARGS 8            /* most arguments any command has (SCHED: 7 + data) */
#define PROTO_HANDLE_MAX 64         /* a job handle is at most this long, without NUL */
#define PROTO_UNIQUE_MAX 64         /* longest unique accepted */

/* Command numbers (the packet "type"). */
enum proto_cmd_id {
    CMD_TEXT = 0, /* not on the wire: an admin text line */
    CMD_CAN_DO = 1,
    CMD_CANT_DO = 2,
    CMD_RESET_ABILITIES = 3,
    CMD_PRE_SLEEP = 4,
    CMD_UNUSED = 5,
    CMD_NOOP = 6,
    CMD_SUBMIT_JOB = 7,
    CMD_JOB_CREATED = 8,
    CMD_GRAB_JOB = 9,
    CMD_NO_JOB = 10,
    CMD_JOB_ASSIGN = 11,
    CMD_WORK_STATUS = 12,
    CMD_WORK_COMPLETE = 13,
    CMD_WORK_FAIL = 14,
    CMD_GET_STATUS = 15,
    CMD_ECHO_REQ = 16,
    CMD_ECHO_RES = 17,
    CMD_SUBMIT_JOB_BG = 18,
    CMD_ERROR = 19,
    CMD_STATUS_RES = 20,
    CMD_SUBMIT_JOB_HIGH = 21,
    CMD_SET_CLIENT_ID = 22,
    CMD_CAN_DO_TIMEOUT = 23,
    CMD_ALL_YOURS = 24,
    CMD_WORK_EXCEPTION = 25,
    CMD_OPTION_REQ = 26,
    CMD_OPTION_RES = 27,
    CMD_WORK_DATA = 28,
    CMD_WORK_WARNING = 29,
    CMD_GRAB_JOB_UNIQ = 30,
    CMD_JOB_ASSIGN_UNIQ = 31,
    CMD_SUBMIT_JOB_HIGH_BG = 32,
    CMD_SUBMIT_JOB_LOW = 33,
    CMD_SUBMIT_JOB_LOW_BG = 34,
    CMD_SUBMIT_JOB_SCHED = 35,
    CMD_SUBMIT_JOB_EPOCH = 36,
    CMD_SUBMIT_REDUCE_JOB = 37,
    CMD_SUBMIT_REDUCE_JOB_BACKGROUND = 38,
    CMD_GRAB_JOB_ALL = 39,
    CMD_JOB_ASSIGN_ALL = 40,
    CMD_GET_STATUS_UNIQUE = 41,
    CMD_STATUS_RES_UNIQUE = 42,
    CMD_MAX = 43, /* one past the last command */
    /* Spur's own packets (docs/PROTOCOL-EXTENSIONS.md), far above gearmand's numbers, which run
     * from 0 without gaps and close the connection on any number past the last: the high 16
     * bits spell "SP" in a hex dump. They are in proto_cmd_ext, not proto_cmd_table. */
    CMD_SPUR_BASE = 0x53500000,
    CMD_CANCEL_JOB = 0x53500001,    /* client -> server: cancel the job with this handle */
    CMD_JOB_CANCELLED = 0x53500002, /* server -> worker (opted in) or client: it was cancelled */
    CMD_SPUR_END = 0x53500003 /* one past the last of Spur's own */
};

/* Command flags: what the server does with a command, beyond its argument shape. The command
 * table is the one place these facts are written; code asks proto_cmd_flags instead of listing
 * command numbers. */
enum proto_cmd_flag {
    PROTO_F_SUBMIT = 1u << 0,    /* a SUBMIT_* request: creates (or joins) a job */
    PROTO_F_DURABLE = 1u << 1,   /* a background submit: no client waits on the job, the store
                                    (if any) writes it, and JOB_CREATED waits for that write */
    PROTO_F_HIGH = 1u << 2,      /* a submit at high priority */
    PROTO_F_LOW = 1u << 3,       /* a submit at low priority */
    PROTO_F_EPOCH = 1u << 4,     /* a submit whose argument 2 is a unix time to run at */
    PROTO_F_SCHED = 1u << 5,     /* a submit whose arguments 2..6 are cron fields */
    PROTO_F_REDUCE = 1u << 6,    /* a submit whose argument 2 is the reducer, 3 the aggregator */
    PROTO_F_TO_WORKER = 1u << 7, /* a reply only workers get (NOOP, NO_JOB, JOB_ASSIGN*): never
                                    held back to batch a client's replies */
    PROTO_F_URGENT = 1u << 8,    /* its receiver idles until it arrives (a worker's wake-up or
                                    next job, a client's result): written first in this loop
                                    iteration, unless batched */
    PROTO_F_RESULT = 1u << 9,    /* a job's final outcome sent to its clients (WORK_COMPLETE,
                                    WORK_FAIL, WORK_EXCEPTION) */
};

/* struct proto_cmd describes how a command's body splits into arguments.
 * has_data=1: argc NUL-terminated arguments, then an opaque tail (may be empty, may hold NULs).
 * has_data=0: argc-1 NUL-terminated arguments, then the last argument runs to the end of the
 *             body with no NUL (it may itself contain NULs, as in gearmand). */
struct proto_cmd {
    uint32_t id;      /* command number */
    const char *name; /* gearmand's name without the GEARMAN_COMMAND_ prefix, e.g. "SUBMIT_JOB" */
    uint8_t argc;     /* number of arguments, not counting the data tail */
    uint8_t has_data; /* 1 if an opaque data tail follows the arguments */
    uint16_t flags;   /* PROTO_F_* */
};

/* proto_cmd_table is the command table, indexed by id (0..CMD_MAX-1). Read it through
 * proto_cmd_info and proto_cmd_flags. */
extern const struct proto_cmd proto_cmd_table[CMD_MAX];

/* proto_cmd_ext is Spur's own commands (CMD_SPUR_BASE + 1 .. CMD_SPUR_END - 1), in number
 * order; proto_cmd_info and proto_cmd_flags read it too. */
extern const struct proto_cmd proto_cmd_ext[CMD_SPUR_END - CMD_SPUR_BASE - 1];

/* proto_cmd_info returns the table entry for id, or NULL for any id outside 0..42 and Spur's
 * own (proto_cmd_ext). Safe for every 32-bit value. */
const struct proto_cmd *proto_cmd_info(uint32_t id);

/* proto_cmd_flags returns id's PROTO_F_* flags, 0 for any id outside the tables. O(1), inline:
 * put_packet asks it for every reply. */
static inline uint32_t proto_cmd_flags(uint32_t id)
{
    if (id < CMD_MAX)
        return proto_cmd_table[id].flags;
    if (id > CMD_SPUR_BASE && id < CMD_SPUR_END)
        return proto_cmd_ext[id - CMD_SPUR_BASE - 1].flags;
    return 0;
}

/* proto_cmd_name returns the command's name, or "UNKNOWN" (never NULL). */
const char *proto_cmd_name(uint32_t id);

/* proto_get32 reads a big-endian 32-bit value. */
static inline uint32_t proto_get32(const void *p)
{
    const unsigned char *b = (const unsigned char *)p;
    return ((uint32_t)b[0] << 24) | ((uint32_t)b[1] << 16) | ((uint32_t)b[2] << 8) | b[3];
}

/* proto_put32 writes a big-endian 32-bit value. */
static inline void proto_put32(void *p, uint32_t v)
{
    unsigned char *b = (unsigned char *)p;
    b[0] = (unsigned char)(v >> 24);
    b[1] = (unsigned char)(v >> 16);
    b[2] = (unsigned char)(v >> 8);
    b[3] = (unsigned char)v;
}

/* proto_header writes a 12-byte packet header into out. */
void proto_header(unsigned char out[PROTO_HEADER_SIZE], uint32_t magic, uint32_t cmd,
                  uint32_t body_size);

/* struct proto_arg is one argument to encode: a pointer and a length (not NUL-terminated). */
struct proto_arg {
    const void *ptr; /* borrowed */
    size_t len;      /* bytes at ptr */
};

/* proto_body_size returns the body size of a packet with these arguments: every argument but the
 * last is followed by a NUL. Returns SIZE_MAX if the total does not fit in 32 bits. */
size_t proto_body_size(const struct proto_arg *args, int nargs);

/* proto_encode writes a whole packet (header, arguments separated by NULs, the last with no NUL)
 * into out, which must hold PROTO_HEADER_SIZE + proto_body_size() bytes. Returns bytes written. */
size_t proto_encode(unsigned char *out, uint32_t magic, uint32_t cmd, const struct proto_arg *args,
                    int nargs);

/* Error codes spurd sends in ERROR packets (gearmand's texts without the GEARMAN_ prefix). */
#define PROTO_ERR_INVALID_MAGIC "INVALID_MAGIC"
#define PROTO_ERR_INVALID_COMMAND "INVALID_COMMAND"
#define PROTO_ERR_INVALID_ARGUMENT "INVALID_ARGUMENT"
#define PROTO_ERR_ARGUMENT_TOO_LARGE "ARGUMENT_TOO_LARGE"
#define PROTO_ERR_QUEUE_ERROR "QUEUE_ERROR"
#define PROTO_ERR_JOB_NOT_FOUND "JOB_NOT_FOUND"
#define PROTO_ERR_UNKNOWN_OPTION "UNKNOWN_OPTION"
#define PROTO_ERR_MEMORY "MEMORY_ALLOCATION_FAILURE"
#define PROTO_ERR_PERMISSION_DENIED "PERMISSION_DENIED" /* Spur: refused by --policy (acl.h) */

#ifdef __cplusplus
}
#endif
#endif
