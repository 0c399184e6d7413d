/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: the worker API (register functions, grab and run jobs). */
#ifndef LIBGEARMAN_COMPAT_WORKER_H
#define LIBGEARMAN_COMPAT_WORKER_H

#include <libgearman/constants.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_worker_create initialises worker (or allocates one when worker is NULL); the servers in
 * GEARMAN_SERVERS are added. Returns the worker, or NULL when out of memory. */
gearman_worker_st *gearman_worker_create(gearman_worker_st *worker);

/* gearman_worker_clone initialises worker (or allocates one) with from's servers, options, timeout,
 * identifier and functions. Returns it, or NULL. */
gearman_worker_st *gearman_worker_clone(gearman_worker_st *worker, const gearman_worker_st *from);

/* gearman_worker_free closes the connections and frees the functions, then the worker itself when
 * the library allocated it. NULL is ignored. */
void gearman_worker_free(gearman_worker_st *worker);

/* gearman_worker_error returns a description of the last error (borrowed), or NULL. */
const char *gearman_worker_error(const gearman_worker_st *worker);

/* gearman_worker_error_code returns the code of the last error (GEARMAN_SUCCESS if none). */
gearman_return_t gearman_worker_error_code(const gearman_worker_st *worker);

/* gearman_worker_errno returns the errno of the last failed system call, or 0. */
int gearman_worker_errno(gearman_worker_st *worker);

/* gearman_worker_options returns the options that are set. */
gearman_worker_options_t gearman_worker_options(const gearman_worker_st *worker);

/* gearman_worker_set_options sets exactly the given options (others are cleared). */
void gearman_worker_set_options(gearman_worker_st *worker, gearman_worker_options_t options);

/* gearman_worker_add_options sets the given options. */
void gearman_worker_add_options(gearman_worker_st *worker, gearman_worker_options_t options);

/* gearman_worker_remove_options clears the given options. */
void gearman_worker_remove_options(gearman_worker_st *worker, gearman_worker_options_t options);

/* gearman_worker_timeout returns the wait timeout in milliseconds (-1: forever). */
int gearman_worker_timeout(gearman_worker_st *worker);

/* gearman_worker_set_timeout makes grab_job/work return GEARMAN_TIMEOUT after timeout ms with no
 * job (it sets GEARMAN_WORKER_TIMEOUT_RETURN); -1 waits forever. */
void gearman_worker_set_timeout(gearman_worker_st *worker, int timeout);

/* gearman_worker_set_ssl is gearman_client_set_ssl for a worker (GEARMAN_WORKER_SSL). */
void gearman_worker_set_ssl(gearman_worker_st *worker, bool ssl, const char *ca_file,
                            const char *certificate, const char *key_file);

/* gearman_worker_context returns the pointer set by gearman_worker_set_context. */
void *gearman_worker_context(const gearman_worker_st *worker);

/* gearman_worker_set_context stores an application pointer on worker. */
void gearman_worker_set_context(gearman_worker_st *worker, void *context);

/* gearman_worker_set_log_fn is accepted for compatibility; the library does not log. */
void gearman_worker_set_log_fn(gearman_worker_st *worker, gearman_log_fn *function, void *context,
                               gearman_verbose_t verbose);

/* gearman_worker_add_server adds a server (host NULL: "localhost"; port 0: 4730). */
gearman_return_t gearman_worker_add_server(gearman_worker_st *worker, const char *host,
                                           in_port_t port);

/* gearman_worker_add_servers adds each "host[:port]" of a comma-separated list. */
gearman_return_t gearman_worker_add_servers(gearman_worker_st *worker, const char *servers);

/* gearman_worker_remove_servers closes and forgets every server. */
void gearman_worker_remove_servers(gearman_worker_st *worker);

/* gearman_worker_wait waits (up to the timeout) for activity; for non-blocking workers. */
gearman_return_t gearman_worker_wait(gearman_worker_st *worker);

/* gearman_worker_set_identifier sets the id sent with SET_CLIENT_ID on every connection. */
gearman_return_t gearman_worker_set_identifier(gearman_worker_st *worker, const char *id,
                                               size_t id_size);

/* gearman_worker_register announces function_name (CAN_DO, or CAN_DO_TIMEOUT when timeout > 0)
 * without a callback; use it with gearman_worker_grab_job. */
gearman_return_t gearman_worker_register(gearman_worker_st *worker, const char *function_name,
                                         uint32_t timeout);

/* gearman_worker_unregister withdraws function_name (CANT_DO). Returns
 * GEARMAN_NO_REGISTERED_FUNCTION when it was not registered. */
gearman_return_t gearman_worker_unregister(gearman_worker_st *worker, const char *function_name);

/* gearman_worker_unregister_all withdraws every function (RESET_ABILITIES). Returns
 * GEARMAN_NO_REGISTERED_FUNCTIONS when there were none. */
gearman_return_t gearman_worker_unregister_all(gearman_worker_st *worker);

/* gearman_worker_function_exist reports whether function_name is registered. */
bool gearman_worker_function_exist(gearman_worker_st *worker, const char *function_name,
                                   size_t function_length);

/* gearman_worker_add_function registers function_name with a v1 callback; timeout > 0 is sent
 * as CAN_DO_TIMEOUT (gearmand re-queues a job that runs longer than that many milliseconds). */
gearman_return_t gearman_worker_add_function(gearman_worker_st *worker, const char *function_name,
                                             uint32_t timeout, gearman_worker_fn *function,
                                             void *context);

/* gearman_worker_define_function registers a function with a gearman_function_t callback. */
gearman_return_t gearman_worker_define_function(gearman_worker_st *worker,
                                                const char *function_name,
                                                const size_t function_name_length,
                                                const gearman_function_t function,
                                                const uint32_t timeout, void *context);

/* gearman_worker_grab_job waits for a job (GRAB_JOB_UNIQ by default, PRE_SLEEP, NOOP). Returns
 * the job (job, or a new one when job is NULL; free it with gearman_job_free) or NULL with
 * *ret_ptr set (GEARMAN_TIMEOUT, GEARMAN_NO_JOBS in non-blocking mode, GEARMAN_COULD_NOT_CONNECT,
 * GEARMAN_NO_SERVERS, GEARMAN_NO_REGISTERED_FUNCTIONS, ...). */
gearman_job_st *gearman_worker_grab_job(gearman_worker_st *worker, gearman_job_st *job,
                                        gearman_return_t *ret_ptr);

/* gearman_worker_work grabs one job, runs its function and sends the result. Returns
 * GEARMAN_SUCCESS, GEARMAN_SHUTDOWN, the function's failure code (after sending WORK_FAIL), or a
 * grab_job error. */
gearman_return_t gearman_worker_work(gearman_worker_st *worker);

/* gearman_worker_echo sends workload in ECHO_REQ to every server and checks each ECHO_RES. */
gearman_return_t gearman_worker_echo(gearman_worker_st *worker, const void *workload,
                                     size_t workload_size);

/* gearman_function_create wraps a v2 callback. */
gearman_function_t gearman_function_create(gearman_function_fn func);

/* gearman_function_create_v1 wraps a v1 callback. */
gearman_function_t gearman_function_create_v1(gearman_worker_fn func);

/* gearman_function_create_v2 wraps a v2 callback. */
gearman_function_t gearman_function_create_v2(gearman_function_fn func);

#ifdef __cplusplus
}
#endif
#endif
