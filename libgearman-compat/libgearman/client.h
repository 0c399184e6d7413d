/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: the client API (submit jobs, run tasks, ask for status). */
#ifndef LIBGEARMAN_COMPAT_CLIENT_H
#define LIBGEARMAN_COMPAT_CLIENT_H

#include <libgearman/constants.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_client_create initialises client (or allocates one when client is NULL). The servers in
 * the environment variable GEARMAN_SERVERS ("h1:p1,h2:p2") are added. Returns the client, or NULL
 * when out of memory. Free it with gearman_client_free. */
gearman_client_st *gearman_client_create(gearman_client_st *client);

/* gearman_client_clone initialises client (or allocates one when NULL) with from's servers,
 * options, timeout, identifier and callbacks (not its tasks). Returns it, or NULL. */
gearman_client_st *gearman_client_clone(gearman_client_st *client, const gearman_client_st *from);

/* gearman_client_free closes the connections and frees every task of client, then the client
 * itself when the library allocated it. NULL is ignored. */
void gearman_client_free(gearman_client_st *client);

/* gearman_client_error returns a description of the last error (borrowed; valid until the next
 * call on client), or NULL when there was none. */
const char *gearman_client_error(const gearman_client_st *client);

/* gearman_client_error_code returns the code of the last error (GEARMAN_SUCCESS if none). */
gearman_return_t gearman_client_error_code(const gearman_client_st *client);

/* gearman_client_errno returns the errno of the last failed system call, or 0. */
int gearman_client_errno(const gearman_client_st *client);

/* gearman_client_options returns the options that are set. */
gearman_client_options_t gearman_client_options(const gearman_client_st *client);

/* gearman_client_set_options sets exactly the given options (others are cleared). */
void gearman_client_set_options(gearman_client_st *client, gearman_client_options_t options);

/* gearman_client_add_options sets the given options. GEARMAN_CLIENT_EXCEPTION makes every
 * connection send OPTION_REQ "exceptions" before its first request. */
void gearman_client_add_options(gearman_client_st *client, gearman_client_options_t options);

/* gearman_client_has_option reports whether option is set. */
bool gearman_client_has_option(gearman_client_st *client, gearman_client_options_t option);

/* gearman_client_remove_options clears the given options. */
void gearman_client_remove_options(gearman_client_st *client, gearman_client_options_t options);

/* gearman_client_timeout returns the I/O timeout in milliseconds (-1: wait forever). */
int gearman_client_timeout(gearman_client_st *client);

/* gearman_client_set_timeout sets the longest time, in milliseconds, that a call waits for any
 * activity from the servers before returning GEARMAN_TIMEOUT (-1: forever, the default). It also
 * bounds each connect(). */
void gearman_client_set_timeout(gearman_client_st *client, int timeout);

/* gearman_client_set_ssl turns TLS on (ssl true, as GEARMAN_CLIENT_SSL) or off for the
 * connections made from now on, and names the PEM files: ca_file, the CA certificate(s) that
 * the server's certificate must chain to; certificate and key_file, the client certificate and
 * its key, sent when the server asks for one. A NULL or "" file falls back on the environment
 * (GEARMAND_CA_CERTIFICATE, GEARMAN_CLIENT_PEM, GEARMAN_CLIENT_KEY), then on libgearman's
 * defaults. The server's certificate is verified (CA and host name) unless the environment has
 * LIBGEARMAN_COMPAT_SSL_VERIFY=none; see docs/LIBGEARMAN-COMPAT.md. */
void gearman_client_set_ssl(gearman_client_st *client, bool ssl, const char *ca_file,
                            const char *certificate, const char *key_file);

/* gearman_client_context returns the pointer set by gearman_client_set_context. */
void *gearman_client_context(const gearman_client_st *client);

/* gearman_client_set_context stores an application pointer on client. */
void gearman_client_set_context(gearman_client_st *client, void *context);

/* gearman_client_set_log_fn is accepted for compatibility; the library does not log. */
void gearman_client_set_log_fn(gearman_client_st *client, gearman_log_fn *function, void *context,
                               gearman_verbose_t verbose);

/* gearman_client_set_identifier sets the id sent with SET_CLIENT_ID on every connection. */
gearman_return_t gearman_client_set_identifier(gearman_client_st *client, const char *id,
                                               size_t id_size);

/* gearman_client_add_server adds a server (host NULL: "localhost"; port 0: 4730). No connection is
 * made until it is needed. Returns GEARMAN_SUCCESS or GEARMAN_MEMORY_ALLOCATION_FAILURE. */
gearman_return_t gearman_client_add_server(gearman_client_st *client, const char *host,
                                           in_port_t port);

/* gearman_client_add_servers adds each "host[:port]" of a comma-separated list. */
gearman_return_t gearman_client_add_servers(gearman_client_st *client, const char *servers);

/* gearman_client_remove_servers closes and forgets every server. */
void gearman_client_remove_servers(gearman_client_st *client);

/* gearman_client_wait waits (up to the timeout) for activity on the client's connections; for use
 * with GEARMAN_CLIENT_NON_BLOCKING. Returns GEARMAN_SUCCESS, GEARMAN_TIMEOUT or
 * GEARMAN_NO_ACTIVE_FDS. */
gearman_return_t gearman_client_wait(gearman_client_st *client);

/* gearman_client_do submits a normal-priority foreground job and waits for it. Returns the result
 * (all WORK_DATA followed by the WORK_COMPLETE payload; malloc()ed, NUL-terminated, free() it) and
 * sets *result_size; *ret_ptr gets GEARMAN_SUCCESS, GEARMAN_WORK_FAIL, GEARMAN_WORK_EXCEPTION,
 * GEARMAN_TIMEOUT, GEARMAN_LOST_CONNECTION, GEARMAN_COULD_NOT_CONNECT, ... A successful job with an
 * empty result returns NULL with GEARMAN_SUCCESS. unique may be NULL. */
void *gearman_client_do(gearman_client_st *client, const char *function_name, const char *unique,
                        const void *workload, size_t workload_size, size_t *result_size,
                        gearman_return_t *ret_ptr);

/* gearman_client_do_high is gearman_client_do at high priority. */
void *gearman_client_do_high(gearman_client_st *client, const char *function_name,
                             const char *unique, const void *workload, size_t workload_size,
                             size_t *result_size, gearman_return_t *ret_ptr);

/* gearman_client_do_low is gearman_client_do at low priority. */
void *gearman_client_do_low(gearman_client_st *client, const char *function_name,
                            const char *unique, const void *workload, size_t workload_size,
                            size_t *result_size, gearman_return_t *ret_ptr);

/* gearman_client_do_job_handle returns the handle of the last gearman_client_do* job (borrowed),
 * or "" before the first. */
const char *gearman_client_do_job_handle(gearman_client_st *client);

/* gearman_client_do_status returns the last WORK_STATUS seen by gearman_client_do*. */
void gearman_client_do_status(gearman_client_st *client, uint32_t *numerator,
                              uint32_t *denominator);

/* gearman_client_do_background submits a normal-priority background job and waits for
 * JOB_CREATED; the handle is copied to job_handle when it is not NULL. A job without a unique gets
 * a generated UUID. */
gearman_return_t gearman_client_do_background(gearman_client_st *client, const char *function_name,
                                              const char *unique, const void *workload,
                                              size_t workload_size,
                                              gearman_job_handle_t job_handle);

/* gearman_client_do_high_background is gearman_client_do_background at high priority. */
gearman_return_t gearman_client_do_high_background(gearman_client_st *client,
                                                   const char *function_name, const char *unique,
                                                   const void *workload, size_t workload_size,
                                                   gearman_job_handle_t job_handle);

/* gearman_client_do_low_background is gearman_client_do_background at low priority. */
gearman_return_t gearman_client_do_low_background(gearman_client_st *client,
                                                  const char *function_name, const char *unique,
                                                  const void *workload, size_t workload_size,
                                                  gearman_job_handle_t job_handle);

/* gearman_client_job_status asks the first reachable server about job_handle. Each out-pointer may
 * be NULL; when is_known and is_running are both NULL the result says it instead:
 * GEARMAN_IN_PROGRESS (running), GEARMAN_JOB_EXISTS (known, queued) or GEARMAN_SUCCESS. */
gearman_return_t gearman_client_job_status(gearman_client_st *client,
                                           const gearman_job_handle_t job_handle, bool *is_known,
                                           bool *is_running, uint32_t *numerator,
                                           uint32_t *denominator);

/* gearman_client_echo sends workload in ECHO_REQ to every server and checks each ECHO_RES.
 * Returns GEARMAN_SUCCESS, GEARMAN_ECHO_DATA_CORRUPTION or a connection error. */
gearman_return_t gearman_client_echo(gearman_client_st *client, const void *workload,
                                     size_t workload_size);

/* gearman_client_task_free_all frees every task of client. */
void gearman_client_task_free_all(gearman_client_st *client);

/* gearman_client_set_task_context_free_fn sets a function called with each task's context when
 * the task is freed. */
void gearman_client_set_task_context_free_fn(gearman_client_st *client,
                                             gearman_task_context_free_fn *function);

/* gearman_client_add_task queues a normal-priority foreground job; it is sent by
 * gearman_client_run_tasks. The workload is copied. task may be a caller-owned shell or NULL.
 * Returns the task (owned by the client until gearman_task_free), or NULL with *ret_ptr set. */
gearman_task_st *gearman_client_add_task(gearman_client_st *client, gearman_task_st *task,
                                         void *context, const char *function_name,
                                         const char *unique, const void *workload,
                                         size_t workload_size, gearman_return_t *ret_ptr);

/* gearman_client_add_task_high is gearman_client_add_task at high priority. */
gearman_task_st *gearman_client_add_task_high(gearman_client_st *client, gearman_task_st *task,
                                              void *context, const char *function_name,
                                              const char *unique, const void *workload,
                                              size_t workload_size, gearman_return_t *ret_ptr);

/* gearman_client_add_task_low is gearman_client_add_task at low priority. */
gearman_task_st *gearman_client_add_task_low(gearman_client_st *client, gearman_task_st *task,
                                             void *context, const char *function_name,
                                             const char *unique, const void *workload,
                                             size_t workload_size, gearman_return_t *ret_ptr);

/* gearman_client_add_task_background queues a normal-priority background job; the task finishes
 * at JOB_CREATED. */
gearman_task_st *gearman_client_add_task_background(gearman_client_st *client,
                                                    gearman_task_st *task, void *context,
                                                    const char *function_name, const char *unique,
                                                    const void *workload, size_t workload_size,
                                                    gearman_return_t *ret_ptr);

/* gearman_client_add_task_high_background is gearman_client_add_task_background at high priority. */
gearman_task_st *gearman_client_add_task_high_background(gearman_client_st *client,
                                                         gearman_task_st *task, void *context,
                                                         const char *function_name,
                                                         const char *unique, const void *workload,
                                                         size_t workload_size,
                                                         gearman_return_t *ret_ptr);

/* gearman_client_add_task_low_background is gearman_client_add_task_background at low priority. */
gearman_task_st *gearman_client_add_task_low_background(gearman_client_st *client,
                                                        gearman_task_st *task, void *context,
                                                        const char *function_name,
                                                        const char *unique, const void *workload,
                                                        size_t workload_size,
                                                        gearman_return_t *ret_ptr);

/* gearman_client_add_task_status queues a GET_STATUS for job_handle; at STATUS_RES the task's
 * is_known/is_running/numerator/denominator are set and the status callback runs. */
gearman_task_st *gearman_client_add_task_status(gearman_client_st *client, gearman_task_st *task,
                                                void *context, const char *job_handle,
                                                gearman_return_t *ret_ptr);

/* gearman_client_set_workload_fn is accepted for compatibility; workloads are always copied at
 * add time, so the function is never called. */
void gearman_client_set_workload_fn(gearman_client_st *client, gearman_workload_fn *function);

/* gearman_client_set_created_fn sets the callback run when a task gets JOB_CREATED. */
void gearman_client_set_created_fn(gearman_client_st *client, gearman_created_fn *function);

/* gearman_client_set_data_fn sets the callback run for each WORK_DATA. */
void gearman_client_set_data_fn(gearman_client_st *client, gearman_data_fn *function);

/* gearman_client_set_warning_fn sets the callback run for each WORK_WARNING. */
void gearman_client_set_warning_fn(gearman_client_st *client, gearman_warning_fn *function);

/* gearman_client_set_status_fn sets the callback run for WORK_STATUS and STATUS_RES. */
void gearman_client_set_status_fn(gearman_client_st *client, gearman_universal_status_fn *function);

/* gearman_client_set_complete_fn sets the callback run at WORK_COMPLETE. */
void gearman_client_set_complete_fn(gearman_client_st *client, gearman_complete_fn *function);

/* gearman_client_set_exception_fn sets the callback run at WORK_EXCEPTION (which the server only
 * forwards when GEARMAN_CLIENT_EXCEPTION is set). */
void gearman_client_set_exception_fn(gearman_client_st *client, gearman_exception_fn *function);

/* gearman_client_set_fail_fn sets the callback run at WORK_FAIL. */
void gearman_client_set_fail_fn(gearman_client_st *client, gearman_fail_fn *function);

/* gearman_client_clear_fn removes every callback. */
void gearman_client_clear_fn(gearman_client_st *client);

/* gearman_client_run_tasks sends the new tasks and processes replies until every task has
 * finished. Returns GEARMAN_SUCCESS, GEARMAN_IO_WAIT (non-blocking mode), GEARMAN_TIMEOUT, a
 * connection error, a server ERROR's code, or a callback's failing return. */
gearman_return_t gearman_client_run_tasks(gearman_client_st *client);

/* gearman_client_has_tasks reports whether client holds any task. */
bool gearman_client_has_tasks(const gearman_client_st *client);

/* gearman_client_has_active_tasks reports whether any task of client has not finished. */
bool gearman_client_has_active_tasks(gearman_client_st *client);

/* gearman_client_set_server_option asks each server to set option (only "exceptions" is known to
 * gearmand) on every connection. Returns true when the option was stored. */
bool gearman_client_set_server_option(gearman_client_st *client, const char *option_arg,
                                      size_t option_arg_size);

#ifdef __cplusplus
}
#endif
#endif
