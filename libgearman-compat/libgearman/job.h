/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: a job a worker is running. */
#ifndef LIBGEARMAN_COMPAT_JOB_H
#define LIBGEARMAN_COMPAT_JOB_H

#include <libgearman/constants.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_job_free frees job (a job from gearman_worker_grab_job). NULL is ignored. */
void gearman_job_free(gearman_job_st *job);

/* gearman_job_send_data sends WORK_DATA and waits until it is written. */
gearman_return_t gearman_job_send_data(gearman_job_st *job, const void *data, size_t data_size);

/* gearman_job_send_warning sends WORK_WARNING and waits until it is written. */
gearman_return_t gearman_job_send_warning(gearman_job_st *job, const void *warning,
                                          size_t warning_size);

/* gearman_job_send_status sends WORK_STATUS numerator/denominator. */
gearman_return_t gearman_job_send_status(gearman_job_st *job, uint32_t numerator,
                                         uint32_t denominator);

/* gearman_job_send_complete sends WORK_COMPLETE; the job is then finished, and later
 * complete/fail/exception calls return GEARMAN_SUCCESS without sending anything. */
gearman_return_t gearman_job_send_complete(gearman_job_st *job, const void *result,
                                           size_t result_size);

/* gearman_job_send_exception sends WORK_EXCEPTION (the server turns it into WORK_FAIL for clients
 * that did not ask for exceptions); the job is then finished. */
gearman_return_t gearman_job_send_exception(gearman_job_st *job, const void *exception,
                                            size_t exception_size);

/* gearman_job_send_fail sends WORK_FAIL; the job is then finished. */
gearman_return_t gearman_job_send_fail(gearman_job_st *job);

/* gearman_job_handle returns the job's NUL-terminated handle (borrowed). */
const char *gearman_job_handle(const gearman_job_st *job);

/* gearman_job_function_name returns the job's function name (borrowed, NUL-terminated). */
const char *gearman_job_function_name(const gearman_job_st *job);

/* gearman_job_unique returns the job's unique id (borrowed; "" when the server sent none). */
const char *gearman_job_unique(const gearman_job_st *job);

/* gearman_job_workload returns the job's workload (borrowed; NUL-terminated one byte past the
 * size), or NULL when it is empty. */
const void *gearman_job_workload(const gearman_job_st *job);

/* gearman_job_workload_size returns the workload's size in bytes. */
size_t gearman_job_workload_size(const gearman_job_st *job);

/* gearman_job_take_workload hands the workload (malloc()ed) to the caller and sets *data_size;
 * the job then has an empty workload. */
void *gearman_job_take_workload(gearman_job_st *job, size_t *data_size);

/* gearman_job_error returns the worker's last error text, or NULL. */
const char *gearman_job_error(gearman_job_st *job);

#ifdef __cplusplus
}
#endif
#endif
