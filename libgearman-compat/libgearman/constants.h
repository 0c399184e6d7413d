/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: limits, option flags, shared types and callback signatures (libgearman 1.1's
 * names and values). Compiles as C and as C++. */
#ifndef LIBGEARMAN_COMPAT_CONSTANTS_H
#define LIBGEARMAN_COMPAT_CONSTANTS_H

#ifdef __cplusplus
#include <cinttypes>
#include <cstddef>
#include <cstdlib>
#include <ctime>
#else
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <time.h>
#endif
#include <netinet/in.h>

#include <libgearman/return.h>

/* Limits, as libgearman defines them. */
#define GEARMAN_ARGS_BUFFER_SIZE 128
#define GEARMAN_DEFAULT_SOCKET_TIMEOUT 10
#define GEARMAN_DEFAULT_CONNECT_TIMEOUT 4000 /* ms, used when no timeout is set */
#define GEARMAN_DEFAULT_TCP_HOST "localhost"
#define GEARMAN_DEFAULT_TCP_PORT 4730
#define GEARMAN_DEFAULT_TCP_PORT_STRING "4730"
#define GEARMAN_FUNCTION_MAX_SIZE 512
#define GEARMAN_JOB_HANDLE_SIZE 64
#define GEARMAN_MAXIMUM_INTEGER_DISPLAY_LENGTH 20
#define GEARMAN_MAX_COMMAND_ARGS 8
#define GEARMAN_MAX_ERROR_SIZE 2048
#define GEARMAN_MAX_IDENTIFIER 254
#define GEARMAN_MAX_UNIQUE_SIZE 64
#define GEARMAN_MAX_UUID_SIZE 36
#define GEARMAN_OPTION_SIZE 64
#define GEARMAN_PACKET_HEADER_SIZE 12
#define GEARMAN_RECV_BUFFER_SIZE 8192
#define GEARMAN_SEND_BUFFER_SIZE 8192
#define GEARMAN_UNIQUE_SIZE GEARMAN_MAX_UNIQUE_SIZE
#define GEARMAN_WORKER_WAIT_TIMEOUT (10 * 1000) /* ms */

#ifdef __cplusplus
extern "C" {
#endif

/* gearman_verbose_t: log levels (only their names are used here). */
typedef enum {
    GEARMAN_VERBOSE_NEVER,
    GEARMAN_VERBOSE_FATAL,
    GEARMAN_VERBOSE_ERROR,
    GEARMAN_VERBOSE_INFO,
    GEARMAN_VERBOSE_DEBUG,
    GEARMAN_VERBOSE_CRAZY,
    GEARMAN_VERBOSE_MAX
} gearman_verbose_t;

/* gearman_client_options_t: flags for gearman_client_set_options and friends. */
typedef enum {
    GEARMAN_CLIENT_ALLOCATED = (1 << 0),         /* read-only: the library allocated the shell */
    GEARMAN_CLIENT_NON_BLOCKING = (1 << 1),      /* run_tasks returns GEARMAN_IO_WAIT instead of waiting */
    GEARMAN_CLIENT_TASK_IN_USE = (1 << 2),       /* unused */
    GEARMAN_CLIENT_UNBUFFERED_RESULT = (1 << 3), /* accepted, ignored: results are always buffered */
    GEARMAN_CLIENT_NO_NEW = (1 << 4),            /* unused */
    GEARMAN_CLIENT_FREE_TASKS = (1 << 5),        /* free add_task tasks once they finish */
    GEARMAN_CLIENT_GENERATE_UNIQUE = (1 << 6),   /* give every job without a unique a UUID */
    GEARMAN_CLIENT_EXCEPTION = (1 << 7),         /* ask servers to forward WORK_EXCEPTION */
    GEARMAN_CLIENT_SSL = (1 << 8),               /* connect with TLS (gearman_client_set_ssl) */
    GEARMAN_CLIENT_MAX = (1 << 9)
} gearman_client_options_t;

/* gearman_worker_options_t: flags for gearman_worker_set_options and friends. */
typedef enum {
    GEARMAN_WORKER_ALLOCATED = (1 << 0),         /* read-only: the library allocated the shell */
    GEARMAN_WORKER_NON_BLOCKING = (1 << 1),      /* grab_job/work return instead of waiting */
    GEARMAN_WORKER_PACKET_INIT = (1 << 2),       /* unused */
    GEARMAN_WORKER_GRAB_JOB_IN_USE = (1 << 3),   /* unused */
    GEARMAN_WORKER_PRE_SLEEP_IN_USE = (1 << 4),  /* unused */
    GEARMAN_WORKER_WORK_JOB_IN_USE = (1 << 5),   /* unused */
    GEARMAN_WORKER_CHANGE = (1 << 6),            /* unused */
    GEARMAN_WORKER_GRAB_UNIQ = (1 << 7),         /* grab with GRAB_JOB_UNIQ (the default) */
    GEARMAN_WORKER_TIMEOUT_RETURN = (1 << 8),    /* return GEARMAN_TIMEOUT when the wait times out */
    GEARMAN_WORKER_GRAB_ALL = (1 << 9),          /* grab with GRAB_JOB_ALL */
    GEARMAN_WORKER_SSL = (1 << 10),              /* connect with TLS (gearman_worker_set_ssl) */
    GEARMAN_WORKER_IDENTIFIER = (1 << 11),       /* send a generated identifier */
    GEARMAN_WORKER_MAX = (1 << 12)
} gearman_worker_options_t;

/* The opaque objects. The shells below are public so that callers can put them on the stack. */
typedef struct gearman_task_st gearman_task_st;
typedef struct gearman_client_st gearman_client_st;
typedef struct gearman_job_st gearman_job_st;
typedef struct gearman_worker_st gearman_worker_st;
typedef struct gearman_task_attr_t gearman_task_attr_t;
typedef struct gearman_result_st gearman_result_st;
typedef struct gearman_string_t gearman_string_t;
typedef struct gearman_argument_t gearman_argument_t;
typedef struct gearman_status_t gearman_status_t;

/* struct gearman_client_st is a client; create it with gearman_client_create. */
struct gearman_client_st {
    struct {
        bool is_allocated;   /* the library allocated this shell and frees it */
        bool is_initialized; /* gearman_client_create succeeded */
    } options;
    void *_impl; /* the library's state; do not touch */
};

/* struct gearman_worker_st is a worker; create it with gearman_worker_create. */
struct gearman_worker_st {
    struct {
        bool is_allocated;   /* the library allocated this shell and frees it */
        bool is_initialized; /* gearman_worker_create succeeded */
    } options;
    void *_impl; /* the library's state; do not touch */
};

/* struct gearman_task_st is one job submitted (or one status request) through the task API. */
struct gearman_task_st {
    struct {
        bool is_allocated; /* the library allocated this shell and frees it */
    } options;
    void *_impl; /* the library's state; do not touch */
};

/* struct gearman_job_st is one job a worker grabbed. */
struct gearman_job_st {
    struct {
        bool is_allocated;   /* the library allocated this shell and frees it */
        bool is_initialized; /* set while the job is valid */
    } options;
    void *_impl; /* the library's state; do not touch */
};

/* gearman_job_handle_t holds a NUL-terminated job handle. */
typedef char gearman_job_handle_t[GEARMAN_JOB_HANDLE_SIZE];

/* enum gearman_job_priority_t is a job's queue priority. */
enum gearman_job_priority_t {
    GEARMAN_JOB_PRIORITY_HIGH,
    GEARMAN_JOB_PRIORITY_NORMAL,
    GEARMAN_JOB_PRIORITY_LOW,
    GEARMAN_JOB_PRIORITY_MAX
};
#ifndef __cplusplus
typedef enum gearman_job_priority_t gearman_job_priority_t;
#endif

/* struct gearman_string_t is a borrowed byte string. */
struct gearman_string_t {
    const char *c_str; /* bytes, not necessarily NUL-terminated */
    size_t size;       /* number of bytes */
};

#define gearman_size(X) (X).size
#define gearman_c_str(X) (X).c_str
#define gearman_string_param(X) (X).c_str, (X).size
#define gearman_string_param_null NULL, 0
#define gearman_string_param_cstr(X) (X), ((X) ? strlen(X) : 0)
#ifndef gearman_literal_param
#define gearman_literal_param(X) (X), ((size_t)(sizeof(X) - 1))
#define gearman_literal_param_size(X) ((size_t)(sizeof(X) - 1))
#endif

/* struct gearman_argument_t is one argument of gearman_execute (only value is used). */
struct gearman_argument_t {
    gearman_string_t name;  /* ignored */
    gearman_string_t value; /* the workload */
};

/* enum gearman_task_attr_kind_t says how gearman_execute submits. */
enum gearman_task_attr_kind_t {
    GEARMAN_TASK_ATTR_FOREGROUND,
    GEARMAN_TASK_ATTR_BACKGROUND,
    GEARMAN_TASK_ATTR_EPOCH
};

/* struct gearman_task_attr_epoch_t carries the time an epoch job should run at. */
struct gearman_task_attr_epoch_t {
    time_t value; /* seconds since 1970 */
};

/* struct gearman_task_attr_t: kind, priority and epoch of a gearman_execute submit. */
struct gearman_task_attr_t {
    enum gearman_task_attr_kind_t kind; /* foreground, background or epoch */
    enum gearman_job_priority_t priority; /* ignored for epoch jobs (always normal) */
    union {
        char bytes[sizeof(struct gearman_task_attr_epoch_t)];
        struct gearman_task_attr_epoch_t epoch; /* for GEARMAN_TASK_ATTR_EPOCH */
    } options;
};

/* struct gearman_status_v1_t is the body of a gearman_status_t. */
struct gearman_status_v1_t {
    enum gearman_return_t result_rc; /* outcome of the status request */
    bool is_known;                   /* the server knows the job */
    bool is_running;                 /* a worker is running it */
    uint32_t numerator;              /* last WORK_STATUS numerator */
    uint32_t denominator;            /* last WORK_STATUS denominator */
    uint32_t client_count;           /* clients waiting on it (GET_STATUS_UNIQUE only) */
};

/* enum gearman_status_version_t tags a gearman_status_t. */
enum gearman_status_version_t { GEARMAN_STATUS_V1 };

/* struct gearman_status_t is a status returned by value. */
struct gearman_status_t {
    enum gearman_status_version_t version_; /* always GEARMAN_STATUS_V1 */
    union {
        struct gearman_status_v1_t mesg_;
        uint8_t raw_[sizeof(struct gearman_status_v1_t)];
    } status_;
};

/* Client callbacks: each gets the task; a failing return stops gearman_client_run_tasks, which
 * then returns that code. */
typedef gearman_return_t(gearman_workload_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_created_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_data_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_warning_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_universal_status_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_complete_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_exception_fn)(gearman_task_st *task);
typedef gearman_return_t(gearman_fail_fn)(gearman_task_st *task);
typedef void(gearman_task_context_free_fn)(gearman_task_st *task, void *context);
typedef void(gearman_log_fn)(const char *line, gearman_verbose_t verbose, void *context);

/* Worker callbacks.
 * gearman_worker_fn (v1): returns a malloc()ed result of *result_size bytes (freed by the library
 * with free()) and sets *ret_ptr; GEARMAN_SUCCESS sends WORK_COMPLETE, GEARMAN_SHUTDOWN sends it
 * and makes gearman_worker_work return GEARMAN_SHUTDOWN, any other failure sends WORK_FAIL.
 * gearman_function_fn (v2): returns GEARMAN_SUCCESS (complete with no data unless the function
 * sent it), GEARMAN_FATAL/GEARMAN_WORK_EXCEPTION (fail), GEARMAN_ERROR (the job is given back by
 * dropping the connection) or GEARMAN_SHUTDOWN. */
typedef void *(gearman_worker_fn)(gearman_job_st *job, void *context, size_t *result_size,
                                  gearman_return_t *ret_ptr);
typedef gearman_return_t(gearman_function_fn)(gearman_job_st *job, void *worker_context);

/* enum gearman_function_kind_t tags a gearman_function_t. */
enum gearman_function_kind_t {
    GEARMAN_WORKER_FUNCTION_NULL,
    GEARMAN_WORKER_FUNCTION_V1,
    GEARMAN_WORKER_FUNCTION_V2,
    GEARMAN_WORKER_FUNCTION_PARTITION
};

/* struct gearman_function_t wraps a worker callback for gearman_worker_define_function. */
struct gearman_function_t {
    enum gearman_function_kind_t kind; /* which member of callback is set */
    union {
        struct {
            gearman_worker_fn *func;
        } function_v1;
        struct {
            gearman_function_fn *func;
        } function_v2;
        char bytes[2 * sizeof(void *)];
    } callback;
};
#ifndef __cplusplus
typedef struct gearman_function_t gearman_function_t;
#endif

#ifdef __cplusplus
}
#endif
#endif
