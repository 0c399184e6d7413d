/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: tasks (jobs submitted through the task API), gearman_execute, results. */
#ifndef LIBGEARMAN_COMPAT_TASK_H
#define LIBGEARMAN_COMPAT_TASK_H

#include <libgearman/constants.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_task_free removes task from its client and frees it (the shell too when the library
 * allocated it). Safe inside a callback for the task being called back. NULL is ignored. */
void gearman_task_free(gearman_task_st *task);

/* gearman_task_context returns the context given when the task was added. */
void *gearman_task_context(const gearman_task_st *task);

/* gearman_task_set_context replaces the task's context. */
void gearman_task_set_context(gearman_task_st *task, void *context);

/* gearman_task_function_name returns the task's function name (borrowed), or NULL for a status
 * task. */
const char *gearman_task_function_name(const gearman_task_st *task);

/* gearman_task_unique returns the unique sent with the task (borrowed; "" if none). */
const char *gearman_task_unique(const gearman_task_st *task);

/* gearman_task_job_handle returns the job handle (borrowed; "" before JOB_CREATED). */
const char *gearman_task_job_handle(const gearman_task_st *task);

/* gearman_task_is_known reports whether the server knows the job (after JOB_CREATED, or per
 * STATUS_RES). */
bool gearman_task_is_known(const gearman_task_st *task);

/* gearman_task_is_running reports whether the job is running (after WORK_* or per STATUS_RES). */
bool gearman_task_is_running(const gearman_task_st *task);

/* gearman_task_numerator returns the last status numerator. */
uint32_t gearman_task_numerator(const gearman_task_st *task);

/* gearman_task_denominator returns the last status denominator. */
uint32_t gearman_task_denominator(const gearman_task_st *task);

/* gearman_task_data returns the payload of the packet that triggered the current callback (the
 * last WORK_DATA/WARNING/COMPLETE/EXCEPTION; borrowed, valid until the next packet for the task),
 * or NULL. */
const void *gearman_task_data(const gearman_task_st *task);

/* gearman_task_data_size returns the size of gearman_task_data. */
size_t gearman_task_data_size(const gearman_task_st *task);

/* gearman_task_take_data hands the current payload to the caller (malloc()ed; free() it). */
void *gearman_task_take_data(gearman_task_st *task, size_t *data_size);

/* gearman_task_recv_data copies up to data_size bytes of the current payload into data and
 * returns the count. */
size_t gearman_task_recv_data(gearman_task_st *task, void *data, size_t data_size,
                              gearman_return_t *ret_ptr);

/* gearman_task_error returns a text for the task's outcome when it failed, else NULL. */
const char *gearman_task_error(const gearman_task_st *task);

/* gearman_task_result returns the accumulated result of a gearman_execute task (all WORK_DATA
 * and the WORK_COMPLETE payload), or NULL when there is none. Borrowed from the task. */
gearman_result_st *gearman_task_result(gearman_task_st *task);

/* gearman_task_return returns the task's outcome: GEARMAN_UNKNOWN_STATE until it finishes, then
 * GEARMAN_SUCCESS, GEARMAN_WORK_FAIL, GEARMAN_WORK_EXCEPTION, GEARMAN_LOST_CONNECTION, a server
 * ERROR's code, ... */
gearman_return_t gearman_task_return(const gearman_task_st *task);

/* gearman_task_strstate returns a short name for the task's state. */
const char *gearman_task_strstate(const gearman_task_st *task);

/* gearman_task_has_exception reports whether the task got WORK_EXCEPTION with a payload. */
bool gearman_task_has_exception(const gearman_task_st *task);

/* gearman_task_exception returns the WORK_EXCEPTION payload (borrowed), or {NULL, 0}. */
gearman_string_t gearman_task_exception(const gearman_task_st *task);

/* gearman_task_is_finished reports whether the task has finished. */
bool gearman_task_is_finished(const gearman_task_st *task);

/* gearman_task_attr_init returns attributes for a foreground job at priority. */
gearman_task_attr_t gearman_task_attr_init(gearman_job_priority_t priority);

/* gearman_task_attr_init_epoch returns attributes for a job to run at epoch (SUBMIT_JOB_EPOCH,
 * which is background and normal priority on the wire). */
gearman_task_attr_t gearman_task_attr_init_epoch(time_t epoch, gearman_job_priority_t priority);

/* gearman_task_attr_init_background returns attributes for a background job at priority. */
gearman_task_attr_t gearman_task_attr_init_background(gearman_job_priority_t priority);

/* gearman_argument_make returns an argument for gearman_execute (the name is ignored). */
gearman_argument_t gearman_argument_make(const char *name, const size_t name_length,
                                         const char *value, const size_t value_size);

/* gearman_execute submits one job (foreground by default; background, priority or epoch per
 * attr) with arguments->value as workload, and runs the client's tasks until it has finished (a
 * background job at JOB_CREATED). Returns the task (free it with gearman_task_free; its outcome is
 * gearman_task_return), or NULL when the job could not be sent (see gearman_client_error). */
gearman_task_st *gearman_execute(gearman_client_st *client, const char *function_name,
                                 size_t function_name_length, const char *unique,
                                 size_t unique_length, gearman_task_attr_t *attr,
                                 gearman_argument_t *arguments, void *context);

/* gearman_execute_by_partition submits one SUBMIT_REDUCE_JOB (SUBMIT_REDUCE_JOB_BACKGROUND with
 * a background attr): partition_function is the function that gets the job, function_name the
 * reducer it is to send the pieces to. A unique is generated when none is given. The priority in
 * attr is not used (the packet has none); an epoch attr is refused (GEARMAN_INVALID_ARGUMENT),
 * as libgearman does. Otherwise as gearman_execute. */
gearman_task_st *gearman_execute_by_partition(gearman_client_st *client,
                                              const char *partition_function,
                                              const size_t partition_function_length,
                                              const char *function_name,
                                              const size_t function_name_length,
                                              const char *unique_str, const size_t unique_length,
                                              gearman_task_attr_t *attr,
                                              gearman_argument_t *arguments, void *context);

/* gearman_result_value returns the result's bytes (borrowed, NUL-terminated), or NULL. */
const char *gearman_result_value(const gearman_result_st *result);

/* gearman_result_size returns the result's size in bytes. */
size_t gearman_result_size(const gearman_result_st *result);

/* gearman_result_string returns the result as a borrowed string. */
gearman_string_t gearman_result_string(const gearman_result_st *result);

/* gearman_result_is_null reports whether the result is empty. */
bool gearman_result_is_null(const gearman_result_st *result);

/* gearman_result_integer parses the result as a decimal integer (0 if it is not one). */
int64_t gearman_result_integer(const gearman_result_st *result);

/* gearman_result_boolean reports whether the result is non-empty and not "0". */
bool gearman_result_boolean(const gearman_result_st *result);

/* gearman_status_return returns the status's result code. */
gearman_return_t gearman_status_return(const gearman_status_t status);

/* gearman_status_is_known returns the status's known flag. */
bool gearman_status_is_known(const gearman_status_t status);

/* gearman_status_is_running returns the status's running flag. */
bool gearman_status_is_running(const gearman_status_t status);

/* gearman_status_numerator returns the status's numerator. */
uint32_t gearman_status_numerator(const gearman_status_t status);

/* gearman_status_denominator returns the status's denominator. */
uint32_t gearman_status_denominator(const gearman_status_t status);

#ifdef __cplusplus
}
#endif
#endif
