/* SPDX-License-Identifier: BSD-3-Clause */
/* proto: the Gearman binary protocol's constants, command table and header codec. */
#include "proto.h"

#include <string.h>

/* Flag sets shared by several rows. */
#define SUB PROTO_F_SUBMIT
#define BG (PROTO_F_SUBMIT | PROTO_F_DURABLE)
#define WAKE (PROTO_F_TO_WORKER | PROTO_F_URGENT)
#define RESULT (PROTO_F_RESULT | PROTO_F_URGENT)

/* One row per command 0..42, indexed by id: {id, name, argc, has_data, flags}. */
const struct proto_cmd proto_cmd_table[CMD_MAX] = {
    {CMD_TEXT, "TEXT", 5, 0, 0},
    {CMD_CAN_DO, "CAN_DO", 1, 0, 0},
    {CMD_CANT_DO, "CANT_DO", 1, 0, 0},
    {CMD_RESET_ABILITIES, "RESET_ABILITIES", 0, 0, 0},
    {CMD_PRE_SLEEP, "PRE_SLEEP", 0, 0, 0},
    {CMD_UNUSED, "UNUSED", 0, 0, 0},
    {CMD_NOOP, "NOOP", 0, 0, WAKE},
    {CMD_SUBMIT_JOB, "SUBMIT_JOB", 2, 1, SUB},
    {CMD_JOB_CREATED, "JOB_CREATED", 1, 0, 0},
    {CMD_GRAB_JOB, "GRAB_JOB", 0, 0, 0},
    {CMD_NO_JOB, "NO_JOB", 0, 0, PROTO_F_TO_WORKER},
    {CMD_JOB_ASSIGN, "JOB_ASSIGN", 2, 1, WAKE},
    {CMD_WORK_STATUS, "WORK_STATUS", 3, 0, 0},
    {CMD_WORK_COMPLETE, "WORK_COMPLETE", 1, 1, RESULT},
    {CMD_WORK_FAIL, "WORK_FAIL", 1, 0, RESULT},
    {CMD_GET_STATUS, "GET_STATUS", 1, 0, 0},
    {CMD_ECHO_REQ, "ECHO_REQ", 0, 1, 0},
    {CMD_ECHO_RES, "ECHO_RES", 0, 1, 0},
    {CMD_SUBMIT_JOB_BG, "SUBMIT_JOB_BG", 2, 1, BG},
    {CMD_ERROR, "ERROR", 2, 0, 0},
    {CMD_STATUS_RES, "STATUS_RES", 5, 0, 0},
    {CMD_SUBMIT_JOB_HIGH, "SUBMIT_JOB_HIGH", 2, 1, SUB | PROTO_F_HIGH},
    {CMD_SET_CLIENT_ID, "SET_CLIENT_ID", 1, 0, 0},
    {CMD_CAN_DO_TIMEOUT, "CAN_DO_TIMEOUT", 2, 0, 0},
    {CMD_ALL_YOURS, "ALL_YOURS", 0, 0, 0},
    {CMD_WORK_EXCEPTION, "WORK_EXCEPTION", 1, 1, RESULT},
    {CMD_OPTION_REQ, "OPTION_REQ", 1, 0, 0},
    {CMD_OPTION_RES, "OPTION_RES", 1, 0, 0},
    {CMD_WORK_DATA, "WORK_DATA", 1, 1, 0},
    {CMD_WORK_WARNING, "WORK_WARNING", 1, 1, 0},
    {CMD_GRAB_JOB_UNIQ, "GRAB_JOB_UNIQ", 0, 0, 0},
    {CMD_JOB_ASSIGN_UNIQ, "JOB_ASSIGN_UNIQ", 3, 1, WAKE},
    {CMD_SUBMIT_JOB_HIGH_BG, "SUBMIT_JOB_HIGH_BG", 2, 1, BG | PROTO_F_HIGH},
    {CMD_SUBMIT_JOB_LOW, "SUBMIT_JOB_LOW", 2, 1, SUB | PROTO_F_LOW},
    {CMD_SUBMIT_JOB_LOW_BG, "SUBMIT_JOB_LOW_BG", 2, 1, BG | PROTO_F_LOW},
    {CMD_SUBMIT_JOB_SCHED, "SUBMIT_JOB_SCHED", 7, 1, BG | PROTO_F_SCHED},
    {CMD_SUBMIT_JOB_EPOCH, "SUBMIT_JOB_EPOCH", 3, 1, BG | PROTO_F_EPOCH},
    {CMD_SUBMIT_REDUCE_JOB, "SUBMIT_REDUCE_JOB", 4, 1, SUB | PROTO_F_REDUCE},
    {CMD_SUBMIT_REDUCE_JOB_BACKGROUND, "SUBMIT_REDUCE_JOB_BACKGROUND", 4, 1, BG | PROTO_F_REDUCE},
    {CMD_GRAB_JOB_ALL, "GRAB_JOB_ALL", 0, 0, 0},
    {CMD_JOB_ASSIGN_ALL, "JOB_ASSIGN_ALL", 4, 1, WAKE},
    {CMD_GET_STATUS_UNIQUE, "GET_STATUS_UNIQUE", 1, 0, 0},
    {CMD_STATUS_RES_UNIQUE, "STATUS_RES_UNIQUE", 6, 0, 0},
};

/* Spur's own commands (docs/PROTOCOL-EXTENSIONS.md), by number from CMD_SPUR_BASE + 1. */
const struct proto_cmd proto_cmd_ext[CMD_SPUR_END - CMD_SPUR_BASE - 1] = {
    {CMD_CANCEL_JOB, "CANCEL_JOB", 1, 0, 0},
    {CMD_JOB_CANCELLED, "JOB_CANCELLED", 1, 0, WAKE},
};

#undef SUB
#undef BG
#undef WAKE
#undef RESULT

const struct proto_cmd *proto_cmd_info(uint32_t id)
{
    if (id > CMD_SPUR_BASE && id < CMD_SPUR_END)
        return &proto_cmd_ext[id - CMD_SPUR_BASE - 1];
    if (id >= CMD_MAX)
        return NULL;
    return &proto_cmd_table[id];
}

const char *proto_cmd_name(uint32_t id)
{
    const struct proto_cmd *c = proto_cmd_info(id);
    return c ? c->name : "UNKNOWN";
}

void proto_header(unsigned char out[PROTO_HEADER_SIZE], uint32_t magic, uint32_t cmd,
                  uint32_t body_size)
{
    proto_put32(out, magic);
    proto_put32(out + 4, cmd);
    proto_put32(out + 8, body_size);
}

size_t proto_body_size(const struct proto_arg *args, int nargs)
{
    uint64_t total = 0;
    for (int i = 0; i < nargs; i++)
        total += args[i].len + (i + 1 < nargs ? 1 : 0);
    if (total > UINT32_MAX)
        return SIZE_MAX;
    return (size_t)total;
}

size_t proto_encode(unsigned char *out, uint32_t magic, uint32_t cmd, const struct proto_arg *args,
                    int nargs)
{
    size_t body = proto_body_size(args, nargs);
    proto_header(out, magic, cmd, (uint32_t)body);
    unsigned char *p = out + PROTO_HEADER_SIZE;
    for (int i = 0; i < nargs; i++) {
        if (args[i].len > 0)
            memcpy(p, args[i].ptr, args[i].len);
        p += args[i].len;
        if (i + 1 < nargs)
            *p++ = '\0';
    }
    return (size_t)(p - out);
}
