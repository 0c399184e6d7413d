/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel: the cancel extension of the binary protocol (cancel.h). */
#include "cancel.h"

#include <strings.h>

#include "engine.h"
#include "job.h"
#include "list.h"
#include "log.h"

/* option_is reports whether the OPTION_REQ's name is name (case-insensitive, as gearmand
 * compares "exceptions"). */
static int option_is(const struct pb_packet *pkt, const char *name, size_t len)
{
    return pkt->len[0] == len && strncasecmp(pkt->arg[0], name, len) == 0;
}

int cancel_option(struct peer *p, const struct pb_packet *pkt)
{
    if (option_is(pkt, "cancel-notify", 13))
        p->flags |= PEER_CANCEL_NOTIFY;
    else if (!option_is(pkt, "cancel-job", 10))
        return 0;
    struct proto_arg a = {pkt->arg[0], pkt->len[0]};
    peer_send(p, CMD_OPTION_RES, &a, 1);
    return 1;
}

/* waits_on reports whether client p is among j's waiters. O(j's waiters). */
static int waits_on(const struct job *j, const struct peer *p)
{
    job_for_each_waiter(w, j) {
        if (w->client == p)
            return 1;
    }
    return 0;
}

void cancel_job_request(struct peer *p, const struct pb_packet *pkt)
{
    struct engine *e = p->eng;
    peer_mark(p, PEER_KIND_CLIENT);
    struct job *j = job_find_handle(e, pkt->arg[0], pkt->len[0]);
    if (j == NULL || !waits_on(j, p)) {
        peer_send_error(p, PROTO_ERR_JOB_NOT_FOUND,
                        "No job with this handle that this connection waits on");
        return;
    }
    char h[JOB_HANDLE_BUF];
    struct proto_arg a = {h, job_handle(e, j, h)};
    log_info("job %llu: cancelled by a client (CANCEL_JOB)", (unsigned long long)j->id);
    job_cancel(e, j); /* p's WORK_FAIL comes first, then the answer */
    peer_send(p, CMD_JOB_CANCELLED, &a, 1);
}

int cancel_notify(struct engine *e, struct peer *worker, const struct job *j)
{
    if (!(worker->flags & PEER_CANCEL_NOTIFY))
        return 0;
    char h[JOB_HANDLE_BUF];
    struct proto_arg a = {h, job_handle(e, j, h)};
    peer_send(worker, CMD_JOB_CANCELLED, &a, 1);
    worker->stopped[worker->stopped_next] = j->id;
    worker->stopped_next = (uint8_t)((worker->stopped_next + 1) % PEER_STOPPED_JOBS);
    return 1;
}

int cancel_late(const struct peer *p, const struct pb_packet *pkt)
{
    uint64_t id;
    if (!(p->flags & PEER_CANCEL_NOTIFY) ||
        job_handle_parse(p->eng, pkt->arg[0], pkt->len[0], &id) != 0)
        return 0;
    for (size_t i = 0; i < PEER_STOPPED_JOBS; i++) {
        if (p->stopped[i] == id)
            return 1;
    }
    return 0;
}
