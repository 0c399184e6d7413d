/* SPDX-License-Identifier: BSD-3-Clause */
/* libgearman-compat: gearman_return_t, with libgearman 1.1's names and numeric values.
 * Compiles as C and as C++. */
#ifndef LIBGEARMAN_COMPAT_RETURN_H
#define LIBGEARMAN_COMPAT_RETURN_H

#ifndef __cplusplus
#include <stdbool.h>
#endif

/* enum gearman_return_t is the result of almost every call. The order (and so every value) is
 * libgearman's: GEARMAN_SUCCESS is 0, GEARMAN_TIMEOUT is 47, GEARMAN_JOB_NOT_FOUND is 52. */
enum gearman_return_t {
    GEARMAN_SUCCESS,                   /* 0: done */
    GEARMAN_IO_WAIT,                   /* 1: non-blocking mode: nothing ready yet, call again */
    GEARMAN_SHUTDOWN,                  /* 2: a worker function asked the worker to stop */
    GEARMAN_SHUTDOWN_GRACEFUL,         /* 3 */
    GEARMAN_ERRNO,                     /* 4: a system call failed, see *_errno() */
    GEARMAN_EVENT,                     /* 5: unused (server only in libgearman) */
    GEARMAN_TOO_MANY_ARGS,             /* 6 */
    GEARMAN_NO_ACTIVE_FDS,             /* 7: nothing to wait for */
    GEARMAN_INVALID_MAGIC,             /* 8 */
    GEARMAN_INVALID_COMMAND,           /* 9 */
    GEARMAN_INVALID_PACKET,            /* 10: the server sent bytes that are not a packet */
    GEARMAN_UNEXPECTED_PACKET,         /* 11 */
    GEARMAN_GETADDRINFO,               /* 12: a server name did not resolve */
    GEARMAN_NO_SERVERS,                /* 13: no server was added */
    GEARMAN_LOST_CONNECTION,           /* 14: a server closed the connection */
    GEARMAN_MEMORY_ALLOCATION_FAILURE, /* 15 */
    GEARMAN_JOB_EXISTS,                /* 16: job_status with no out-pointers: known, not running */
    GEARMAN_JOB_QUEUE_FULL,            /* 17 */
    GEARMAN_SERVER_ERROR,              /* 18: an ERROR packet with an unknown code */
    GEARMAN_WORK_ERROR,                /* 19 */
    GEARMAN_WORK_DATA,                 /* 20 */
    GEARMAN_WORK_WARNING,              /* 21 */
    GEARMAN_WORK_STATUS,               /* 22 */
    GEARMAN_WORK_EXCEPTION,            /* 23: the worker sent WORK_EXCEPTION */
    GEARMAN_WORK_FAIL,                 /* 24: the worker sent WORK_FAIL */
    GEARMAN_NOT_CONNECTED,             /* 25 */
    GEARMAN_COULD_NOT_CONNECT,         /* 26: no server accepted a connection */
    GEARMAN_SEND_IN_PROGRESS,          /* 27: unused */
    GEARMAN_RECV_IN_PROGRESS,          /* 28: unused */
    GEARMAN_NOT_FLUSHING,              /* 29 */
    GEARMAN_DATA_TOO_LARGE,            /* 30 */
    GEARMAN_INVALID_FUNCTION_NAME,     /* 31: a job for a function this worker has no callback for */
    GEARMAN_INVALID_WORKER_FUNCTION,   /* 32 */
    GEARMAN_NO_REGISTERED_FUNCTION,    /* 33: unregister of a name that is not registered */
    GEARMAN_NO_REGISTERED_FUNCTIONS,   /* 34: a worker with no functions */
    GEARMAN_NO_JOBS,                   /* 35: non-blocking worker: no job now */
    GEARMAN_ECHO_DATA_CORRUPTION,      /* 36: ECHO_RES differs from what was sent */
    GEARMAN_NEED_WORKLOAD_FN,          /* 37 */
    GEARMAN_PAUSE,                     /* 38 */
    GEARMAN_UNKNOWN_STATE,             /* 39: a task that has not finished yet */
    GEARMAN_PTHREAD,                   /* 40: unused */
    GEARMAN_PIPE_EOF,                  /* 41: unused */
    GEARMAN_QUEUE_ERROR,               /* 42: the server refused a job (queue full, store failure) */
    GEARMAN_FLUSH_DATA,                /* 43: unused */
    GEARMAN_SEND_BUFFER_TOO_SMALL,     /* 44 */
    GEARMAN_IGNORE_PACKET,             /* 45: unused */
    GEARMAN_UNKNOWN_OPTION,            /* 46: the server refused an OPTION_REQ */
    GEARMAN_TIMEOUT,                   /* 47: nothing happened within the timeout */
    GEARMAN_ARGUMENT_TOO_LARGE,        /* 48 */
    GEARMAN_INVALID_ARGUMENT,          /* 49 */
    GEARMAN_IN_PROGRESS,               /* 50: job_status with no out-pointers: running */
    GEARMAN_INVALID_SERVER_OPTION,     /* 51 */
    GEARMAN_JOB_NOT_FOUND,             /* 52 */
    GEARMAN_MAX_RETURN,                /* 53: one past the last code */
    GEARMAN_FAIL = GEARMAN_WORK_FAIL,
    GEARMAN_FATAL = GEARMAN_WORK_FAIL,
    GEARMAN_ERROR = GEARMAN_WORK_ERROR
};

#ifndef __cplusplus
typedef enum gearman_return_t gearman_return_t;
#endif

/* gearman_continue reports whether rc means "not finished, call again" (IO_WAIT, IN_PROGRESS,
 * PAUSE, JOB_EXISTS). */
static inline bool gearman_continue(enum gearman_return_t rc)
{
    return rc == GEARMAN_IO_WAIT || rc == GEARMAN_IN_PROGRESS || rc == GEARMAN_PAUSE ||
           rc == GEARMAN_JOB_EXISTS;
}

/* gearman_failed reports whether rc is anything but GEARMAN_SUCCESS. */
static inline bool gearman_failed(enum gearman_return_t rc)
{
    return rc != GEARMAN_SUCCESS;
}

/* gearman_success reports whether rc is GEARMAN_SUCCESS. */
static inline bool gearman_success(enum gearman_return_t rc)
{
    return rc == GEARMAN_SUCCESS;
}

#endif
