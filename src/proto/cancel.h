/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel: the cancel extension of the binary protocol (docs/PROTOCOL-EXTENSIONS.md): a worker's
 * opt-in to JOB_CANCELLED notices (OPTION_REQ cancel-notify), a client's CANCEL_JOB of a job it
 * waits on, and the notice itself, sent when the core stops a running job (engine_sink
 * job_stopped: the admin `cancel job`, a CAN_DO_TIMEOUT or per-job timeout). */
#ifndef SPUR_CANCEL_H
#define SPUR_CANCEL_H

#include "peer.h"
#include "proto_bin.h"

#ifdef __cplusplus
extern "C" {
#endif

struct engine;
struct job;

/* cancel_option answers the OPTION_REQ names of the extension: "cancel-notify" (p gets
 * JOB_CANCELLED notices from now on) and "cancel-job" (a probe: CANCEL_JOB is understood), with
 * OPTION_RES naming it. Returns 1 when it answered, 0 when the name is neither. */
int cancel_option(struct peer *p, const struct pb_packet *pkt);

/* cancel_job_request handles CANCEL_JOB: the job named by the handle is cancelled (job_cancel:
 * its clients get WORK_FAIL, its worker the notice if it opted in) when p waits on it, and p
 * then gets JOB_CANCELLED with the handle; else ERROR JOB_NOT_FOUND. */
void cancel_job_request(struct peer *p, const struct pb_packet *pkt);

/* cancel_notify is engine_sink.job_stopped: when worker opted in (PEER_CANCEL_NOTIFY) it is
 * sent JOB_CANCELLED with j's handle and j's number is remembered (cancel_late); returns 1,
 * else 0 and nothing is sent. */
int cancel_notify(struct engine *e, struct peer *worker, const struct job *j);

/* cancel_late reports whether a work packet (WORK_*) from p whose job is gone is about a job p
 * was told to stop (cancel_notify): such a packet is dropped without a reply. */
int cancel_late(const struct peer *p, const struct pb_packet *pkt);

#ifdef __cplusplus
}
#endif
#endif
