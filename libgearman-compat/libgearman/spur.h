/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: Spur's extensions to libgearman's API (docs/LIBGEARMAN-COMPAT.md,
 * "Spur's extensions"; the packets and options in docs/PROTOCOL-EXTENSIONS.md). libgearman has
 * none of these: a program that uses them tests LIBGEARMAN_COMPAT_SPUR_CANCEL first. Against a
 * server without the extension (gearmand) each call fails cleanly and changes nothing. */
#ifndef LIBGEARMAN_COMPAT_SPUR_H
#define LIBGEARMAN_COMPAT_SPUR_H

#include <libgearman/constants.h>
#include <libgearman/return.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Defined when the calls below exist. */
#define LIBGEARMAN_COMPAT_SPUR_CANCEL 1

/* gearman_client_set_job_timeout asks every server to fail each job this client submits from
 * now on when it has run timeout_ms milliseconds on a worker (OPTION_REQ job-timeout=MS, on
 * each connection, open or opened later); 0 sets no timeout. A server without per-job timeouts
 * answers ERROR, which the next call that reads replies reports as
 * GEARMAN_INVALID_SERVER_OPTION. Returns GEARMAN_SUCCESS once the option is stored. */
gearman_return_t gearman_client_set_job_timeout(gearman_client_st *client, uint32_t timeout_ms);

/* gearman_client_set_job_ttl is gearman_client_set_job_timeout for the time to live of the jobs
 * submitted from now on (OPTION_REQ job-ttl=S): a job no worker started within ttl_seconds is
 * removed. */
gearman_return_t gearman_client_set_job_ttl(gearman_client_st *client, uint32_t ttl_seconds);

/* gearman_client_cancel_job cancels the job with this handle, which a task of this client
 * submitted and still waits on (a foreground job, queued or running): the server fails it
 * (the task ends with WORK_FAIL) and tells its worker if the worker asked for the notice.
 * It asks the server first whether it understands CANCEL_JOB (OPTION_REQ cancel-job), then
 * waits for the answer (up to the client's timeout). Returns GEARMAN_SUCCESS,
 * GEARMAN_JOB_NOT_FOUND (no such job, or not one this connection waits on: a background job
 * is cancelled with spuradmin --cancel instead), GEARMAN_INVALID_ARGUMENT (no task of this
 * client has the handle), GEARMAN_INVALID_SERVER_OPTION (the server has no CANCEL_JOB), or a
 * connection error. */
gearman_return_t gearman_client_cancel_job(gearman_client_st *client, const char *job_handle);

/* gearman_worker_set_cancel_notify asks every server (on each connection, open or opened
 * later: OPTION_REQ cancel-notify) to send this worker JOB_CANCELLED when a job it runs is
 * cancelled or passes its timeout; gearman_job_is_cancelled then reports it. Returns
 * GEARMAN_SUCCESS once the option is stored (a server without it answers ERROR, which the
 * worker ignores). */
gearman_return_t gearman_worker_set_cancel_notify(gearman_worker_st *worker);

/* gearman_job_is_cancelled reports whether the server gave up on job: it sent JOB_CANCELLED
 * for it (the worker called gearman_worker_set_cancel_notify), or the connection it came from
 * is lost (the server re-queues or fails it). Reads what has arrived without waiting, so a
 * long-running function calls it between chunks of work and returns early when it is true
 * (its result is then dropped by the server). */
bool gearman_job_is_cancelled(gearman_job_st *job);

#ifdef __cplusplus
}
#endif
#endif
