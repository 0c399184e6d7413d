/* SPDX-License-Identifier: BSD-3-Clause */
/* task: the task state machine. A reply packet that belongs to a task goes in; the task's fields
 * change and the event for the user's callback comes out. Pure: no sockets, no callbacks. */
#include "lgc.h"

#include <stdlib.h>
#include <string.h>

/* finish ends the task with code. */
static void finish(struct lgc_task *t, gearman_return_t code)
{
    t->state = LGC_TASK_FINISHED;
    t->result_rc = code;
}

/* set_data replaces the task's current payload with a copy of data. Returns 0 or -1. */
static int set_data(struct lgc_task *t, const char *data, size_t size)
{
    free(t->data);
    t->data = NULL;
    t->data_size = 0;
    if (size == 0)
        return 0;
    t->data = malloc(size + 1);
    if (t->data == NULL)
        return -1;
    memcpy(t->data, data, size);
    t->data[size] = '\0';
    t->data_size = size;
    return 0;
}

/* accumulates reports whether the task collects its result (gearman_execute and do*). */
static bool accumulates(const struct lgc_task *t)
{
    return t->kind != LGC_KIND_ADD_TASK;
}

bool lgc_handle_matches(const char *handle, const char *arg, size_t len)
{
    while (len > 0 && arg[len - 1] == '\0')
        len--;
    return handle[0] != '\0' && strlen(handle) == len && memcmp(handle, arg, len) == 0;
}

enum lgc_event lgc_task_apply(struct lgc_task *t, const struct pb_packet *pkt)
{
    if (t->state == LGC_TASK_FINISHED)
        return LGC_EV_NONE;
    switch (pkt->cmd) {
    case CMD_JOB_CREATED: {
        if (t->state != LGC_TASK_SUBMITTED)
            return LGC_EV_NONE;
        size_t len = pkt->len[0];
        if (len >= sizeof t->handle)
            len = sizeof t->handle - 1;
        memcpy(t->handle, pkt->arg[0], len);
        t->handle[len] = '\0';
        t->is_known = true;
        if (t->background)
            finish(t, GEARMAN_SUCCESS);
        else
            t->state = LGC_TASK_WORKING;
        return LGC_EV_CREATED;
    }
    case CMD_STATUS_RES:
        if (t->cmd != CMD_GET_STATUS)
            return LGC_EV_NONE;
        t->is_known = lgc_parse_u32(pkt->arg[1], pkt->len[1]) != 0;
        t->is_running = lgc_parse_u32(pkt->arg[2], pkt->len[2]) != 0;
        t->numerator = lgc_parse_u32(pkt->arg[3], pkt->len[3]);
        t->denominator = lgc_parse_u32(pkt->arg[4], pkt->len[4]);
        finish(t, GEARMAN_SUCCESS);
        return LGC_EV_STATUS;
    case CMD_WORK_DATA:
    case CMD_WORK_WARNING:
        t->is_known = true;
        t->is_running = true;
        if (set_data(t, pkt->data, pkt->data_len) != 0)
            return LGC_EV_NOMEM;
        if (pkt->cmd == CMD_WORK_WARNING)
            return LGC_EV_WARNING;
        if (accumulates(t) && lgc_result_append(&t->result, pkt->data, pkt->data_len) != 0)
            return LGC_EV_NOMEM;
        return LGC_EV_DATA;
    case CMD_WORK_STATUS:
        t->is_known = true;
        t->is_running = true;
        t->numerator = lgc_parse_u32(pkt->arg[1], pkt->len[1]);
        t->denominator = lgc_parse_u32(pkt->arg[2], pkt->len[2]);
        return LGC_EV_STATUS;
    case CMD_WORK_COMPLETE:
        t->is_known = false;
        t->is_running = false;
        if (set_data(t, pkt->data, pkt->data_len) != 0 ||
            (accumulates(t) && lgc_result_append(&t->result, pkt->data, pkt->data_len) != 0)) {
            finish(t, GEARMAN_MEMORY_ALLOCATION_FAILURE);
            return LGC_EV_NOMEM;
        }
        finish(t, GEARMAN_SUCCESS);
        return LGC_EV_COMPLETE;
    case CMD_WORK_EXCEPTION:
        t->is_known = false;
        t->is_running = false;
        lgc_result_free(&t->result);
        lgc_result_free(&t->exception);
        if (set_data(t, pkt->data, pkt->data_len) != 0 ||
            lgc_result_append(&t->exception, pkt->data, pkt->data_len) != 0) {
            finish(t, GEARMAN_MEMORY_ALLOCATION_FAILURE);
            return LGC_EV_NOMEM;
        }
        finish(t, GEARMAN_WORK_EXCEPTION);
        return LGC_EV_EXCEPTION;
    case CMD_WORK_FAIL:
        t->is_known = false;
        t->is_running = false;
        lgc_result_free(&t->result);
        set_data(t, NULL, 0);
        finish(t, GEARMAN_WORK_FAIL);
        return LGC_EV_FAIL;
    default:
        return LGC_EV_NONE;
    }
}

void lgc_task_fail(struct lgc_task *t, gearman_return_t code)
{
    if (t->state == LGC_TASK_FINISHED)
        return;
    t->is_running = false;
    finish(t, code);
}

const char *lgc_task_state_name(enum lgc_task_state s)
{
    switch (s) {
    case LGC_TASK_NEW: return "new";
    case LGC_TASK_SUBMITTED: return "submit";
    case LGC_TASK_WORKING: return "work";
    case LGC_TASK_FINISHED: return "finished";
    }
    return "unknown";
}
