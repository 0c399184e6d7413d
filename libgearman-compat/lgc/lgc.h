/* SPDX-License-Identifier: BSD-3-Clause */
/* lgc: libgearman-compat's internal state and helpers. Not installed.
 * Module map:
 *   core.c   buffers, the reply FIFO, server-list parsing, error codes, small value types (pure)
 *   task.c   the task state machine: one reply packet in, fields and an event out (pure)
 *   conn.c   one server connection: connect, write, read, frame with proto_bin (sockets)
 *   client.c the client: submitting, run_tasks, do*, status, echo, execute
 *   worker.c the worker and its jobs
 *   tls.c    TLS on a connection (OpenSSL): the context, the handshake, recv/send-like I/O
 * The packet codec is the project's one codec: proto.h (encode) and proto_bin.h (parse). */
#ifndef LGC_LGC_H
#define LGC_LGC_H

/* The library is compiled with -fvisibility=hidden; the functions the public headers declare are
 * the ones it exports (the version script libgearman-compat.map lists the same names). */
#pragma GCC visibility push(default)
#include <libgearman/gearman.h>
#pragma GCC visibility pop

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>

#include "proto.h"
#include "proto_bin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- byte buffer */

/* struct lgc_buf is a growable byte queue: bytes [start, end) of data are pending. */
struct lgc_buf {
    char *data;   /* owned storage, NULL until first use */
    size_t start; /* offset of the first pending byte */
    size_t end;   /* offset one past the last pending byte */
    size_t cap;   /* bytes allocated at data */
};

/* lgc_buf_reserve makes room for n more bytes after end (moving or growing storage).
 * Returns a pointer to the free space, or NULL when out of memory. Pointers into the buffer are
 * invalidated. */
char *lgc_buf_reserve(struct lgc_buf *b, size_t n);

/* lgc_buf_len returns the number of pending bytes. */
static inline size_t lgc_buf_len(const struct lgc_buf *b)
{
    return b->end - b->start;
}

/* lgc_buf_head returns a pointer to the first pending byte (valid until the next reserve). */
static inline char *lgc_buf_head(const struct lgc_buf *b)
{
    return b->data + b->start;
}

/* lgc_buf_consume drops n pending bytes from the front. */
void lgc_buf_consume(struct lgc_buf *b, size_t n);

/* lgc_buf_clear drops every pending byte and releases storage above 1 MiB. */
void lgc_buf_clear(struct lgc_buf *b);

/* lgc_buf_free releases the storage. */
void lgc_buf_free(struct lgc_buf *b);

/* lgc_buf_append_packet encodes a request packet (header and NUL-separated arguments) at the end
 * of b with proto_encode. Returns 0, or -1 when out of memory or the body exceeds 4 GiB. */
int lgc_buf_append_packet(struct lgc_buf *b, uint32_t cmd, const struct proto_arg *args, int nargs);

/* ---------------------------------------------------------------- reply FIFO */

/* enum lgc_pend_kind says which reply a request sent on a connection is waiting for. The server
 * answers these requests in the order they were sent. */
enum lgc_pend_kind {
    LGC_PEND_SUBMIT, /* SUBMIT_JOB*: JOB_CREATED or ERROR */
    LGC_PEND_STATUS, /* GET_STATUS: STATUS_RES or ERROR */
    LGC_PEND_OPTION, /* OPTION_REQ: OPTION_RES or ERROR */
    LGC_PEND_ECHO,   /* ECHO_REQ: ECHO_RES or ERROR */
    LGC_PEND_CANCEL, /* Spur: OPTION_REQ cancel-job (OPTION_RES) or CANCEL_JOB (JOB_CANCELLED),
                        or ERROR: the answer goes to gearman_client_cancel_job */
};

struct lgc_task;

/* struct lgc_pend is one request waiting for its reply. */
struct lgc_pend {
    enum lgc_pend_kind kind; /* which reply is expected */
    struct lgc_task *task;   /* the task that sent it; NULL for no task or once the task is freed */
};

/* struct lgc_fifo is a ring of lgc_pend in send order. */
struct lgc_fifo {
    struct lgc_pend *items; /* owned ring storage */
    size_t head;            /* index of the oldest entry */
    size_t len;             /* number of entries */
    size_t cap;             /* slots allocated */
};

/* lgc_fifo_push appends an entry. Returns 0, or -1 when out of memory. */
int lgc_fifo_push(struct lgc_fifo *f, enum lgc_pend_kind kind, struct lgc_task *task);

/* lgc_fifo_peek returns the oldest entry (borrowed), or NULL when empty. */
struct lgc_pend *lgc_fifo_peek(struct lgc_fifo *f);

/* lgc_fifo_pop removes the oldest entry (no-op when empty). */
void lgc_fifo_pop(struct lgc_fifo *f);

/* lgc_fifo_forget clears the task pointer of every entry that refers to task. */
void lgc_fifo_forget(struct lgc_fifo *f, const struct lgc_task *task);

/* lgc_fifo_clear empties the FIFO (storage kept). */
void lgc_fifo_clear(struct lgc_fifo *f);

/* lgc_fifo_free releases the storage. */
void lgc_fifo_free(struct lgc_fifo *f);

/* ---------------------------------------------------------------- connections and shared state */

/* struct lgc_conn is one server of a client or worker, connected on demand. */
struct lgc_conn {
    struct lgc_conn *next;  /* next server, in the order they were added */
    char *host;             /* owned host name */
    char port[16];          /* port as text */
    int fd;                 /* socket, -1 while not connected */
    unsigned generation;    /* bumped at every successful connect: detects reconnects */
    struct lgc_buf in;      /* bytes read and not yet parsed */
    struct lgc_buf out;     /* bytes queued and not yet written */
    struct lgc_fifo pend;   /* requests waiting for in-order replies (client) */
    bool sleeping;          /* worker: PRE_SLEEP sent, waiting for NOOP */
    bool noop;              /* worker: NOOP received while sleeping */
    struct ssl_st *ssl;     /* the TLS session over fd (owned), NULL for plain TCP */
    bool ssl_read_wants_write; /* TLS: the last read needs the socket writable to go on */
    bool was_tls;           /* the last connection was TLS (its errors say so) */
    char ssl_error[160];    /* TLS: OpenSSL's text for the last failed read or write */
};

/* struct lgc_universal is what clients and workers share: servers, timeout, options, last error. */
struct lgc_universal {
    struct lgc_conn *conns;       /* servers, in the order added */
    int timeout;                  /* ms of inactivity before GEARMAN_TIMEOUT; -1 forever */
    bool non_blocking;            /* return GEARMAN_IO_WAIT instead of waiting */
    bool is_worker;               /* a worker's: its timeout text says pipe:true, as libgearman's */
    char *identifier;             /* SET_CLIENT_ID value, owned, or NULL */
    size_t identifier_len;        /* bytes at identifier */
    char **options;               /* OPTION_REQ names sent on every new connection, owned */
    size_t noptions;              /* entries in options */
    gearman_return_t error_code;  /* last error, GEARMAN_SUCCESS if none */
    int last_errno;               /* errno of the last failed system call */
    char error[GEARMAN_MAX_ERROR_SIZE]; /* text of the last error, "" if none */
    /* called after every successful connect, to queue what the owner announces (CAN_DO) */
    gearman_return_t (*on_connect)(void *owner, struct lgc_conn *conn);
    void *owner; /* argument for on_connect */
    bool ssl;                     /* connect with TLS (GEARMAN_CLIENT_SSL / GEARMAN_WORKER_SSL) */
    char *ssl_ca_file;            /* owned; NULL: $GEARMAND_CA_CERTIFICATE or the default */
    char *ssl_cert_file;          /* owned; NULL: $GEARMAN_CLIENT_PEM or the default */
    char *ssl_key_file;           /* owned; NULL: $GEARMAN_CLIENT_KEY or the default */
    struct ssl_ctx_st *ssl_ctx;   /* owned; built at the first TLS connect, NULL before */
    struct bio_method_st *ssl_bio; /* owned; the socket BIO method of ssl_ctx's sessions */
};

/* lgc_set_error records an error (code, errno 0, text from fmt) and returns code. */
gearman_return_t lgc_set_error(struct lgc_universal *u, gearman_return_t code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* lgc_set_timeout records GEARMAN_TIMEOUT after waiting on nservers connections, in libgearman's
 * words (programs print them), and returns GEARMAN_TIMEOUT. */
gearman_return_t lgc_set_timeout(struct lgc_universal *u, unsigned nservers);

/* lgc_set_errno records an errno-based error and returns code. */
gearman_return_t lgc_set_errno(struct lgc_universal *u, gearman_return_t code, int err,
                               const char *what);

/* lgc_clear_error forgets the last error. */
void lgc_clear_error(struct lgc_universal *u);

/* lgc_universal_init sets the defaults (no servers, timeout -1). */
void lgc_universal_init(struct lgc_universal *u);

/* lgc_universal_free closes every connection and frees servers, identifier and options. */
void lgc_universal_free(struct lgc_universal *u);

/* lgc_universal_copy copies from's servers (not connected), timeout, identifier and options into
 * the freshly initialised u. Returns 0, or -1 when out of memory. */
int lgc_universal_copy(struct lgc_universal *u, const struct lgc_universal *from);

/* lgc_add_server appends a server (host NULL or "": localhost; port 0: 4730). */
gearman_return_t lgc_add_server(struct lgc_universal *u, const char *host, in_port_t port);

/* lgc_server_fn is called by lgc_parse_servers for each entry. */
typedef gearman_return_t (*lgc_server_fn)(void *ctx, const char *host, in_port_t port);

/* lgc_parse_servers splits "h1[:p1],h2[:p2],..." (an IPv6 host goes in brackets: "[::1]:4730")
 * and calls fn for each entry with port 0 when none was given. Empty entries are skipped.
 * Returns GEARMAN_SUCCESS, fn's first failure, or GEARMAN_INVALID_ARGUMENT for a bad port. */
gearman_return_t lgc_parse_servers(const char *servers, lgc_server_fn fn, void *ctx);

/* lgc_remove_servers closes and frees every server. */
void lgc_remove_servers(struct lgc_universal *u);

/* lgc_set_identifier stores the SET_CLIENT_ID value (NULL/0 clears it). */
gearman_return_t lgc_set_identifier(struct lgc_universal *u, const char *id, size_t len);

/* lgc_add_option stores an OPTION_REQ name sent on each new connection (no duplicates).
 * Returns 0, or -1 when out of memory. */
int lgc_add_option(struct lgc_universal *u, const char *name, size_t len);

/* lgc_return_from_server_code maps an ERROR packet's code ("QUEUE_ERROR", "JOB_NOT_FOUND", ...;
 * gearman_strerror names without "GEARMAN_") to a gearman_return_t, or GEARMAN_SERVER_ERROR. */
gearman_return_t lgc_return_from_server_code(const char *code, size_t len);

/* lgc_submit_cmd returns the SUBMIT_JOB* command for a priority and background flag. */
uint32_t lgc_submit_cmd(gearman_job_priority_t priority, bool background);

/* lgc_make_uuid writes a random version-4 UUID (36 characters and a NUL) into out. */
void lgc_make_uuid(char out[GEARMAN_MAX_UUID_SIZE + 1]);

/* lgc_parse_u32 parses a decimal number of at most len bytes, as gearmand's atoi would (stops at
 * the first non-digit; saturates at UINT32_MAX). */
uint32_t lgc_parse_u32(const char *s, size_t len);

/* ---------------------------------------------------------------- connection I/O (conn.c) */

/* lgc_conn_connect connects conn (timeout: u->timeout, or GEARMAN_DEFAULT_CONNECT_TIMEOUT when
 * not positive), queues SET_CLIENT_ID when an identifier is set, the OPTION_REQs, and whatever
 * u->on_connect queues. Returns GEARMAN_SUCCESS,
 * GEARMAN_GETADDRINFO or GEARMAN_COULD_NOT_CONNECT (error recorded in u). */
gearman_return_t lgc_conn_connect(struct lgc_universal *u, struct lgc_conn *conn);

/* lgc_conn_close closes the socket and drops buffered bytes and pending replies. */
void lgc_conn_close(struct lgc_conn *conn);

/* lgc_conn_queue encodes a request packet into conn's output. Returns GEARMAN_SUCCESS or
 * GEARMAN_MEMORY_ALLOCATION_FAILURE. */
gearman_return_t lgc_conn_queue(struct lgc_universal *u, struct lgc_conn *conn, uint32_t cmd,
                                const struct proto_arg *args, int nargs);

/* lgc_conn_write writes queued output without blocking. Returns 0, or -1 when the connection
 * failed (it is then closed and the error recorded as GEARMAN_LOST_CONNECTION). */
int lgc_conn_write(struct lgc_universal *u, struct lgc_conn *conn);

/* lgc_conn_read reads what is available without blocking. Returns 0, or -1 when the peer closed
 * or the connection failed (closed; GEARMAN_LOST_CONNECTION recorded). */
int lgc_conn_read(struct lgc_universal *u, struct lgc_conn *conn);

/* lgc_conn_packet parses the next buffered packet. Returns 1 with *pkt set (borrowed from conn->in
 * until lgc_conn_consume(conn, *used)), 0 when more bytes are needed, or -1 when the bytes are not
 * a response packet (the connection is then closed; GEARMAN_INVALID_PACKET recorded). */
int lgc_conn_packet(struct lgc_universal *u, struct lgc_conn *conn, struct pb_packet *pkt,
                    size_t *used);

/* lgc_conn_consume drops a processed packet from conn's input. */
void lgc_conn_consume(struct lgc_conn *conn, size_t used);

/* lgc_conn_flush writes all queued output, waiting up to the timeout for the socket. Returns
 * GEARMAN_SUCCESS, GEARMAN_TIMEOUT or GEARMAN_LOST_CONNECTION (closed). */
gearman_return_t lgc_conn_flush(struct lgc_universal *u, struct lgc_conn *conn);

/* lgc_conn_recv flushes output and waits for one whole packet. Returns GEARMAN_SUCCESS with *pkt
 * and *used set (borrowed; call lgc_conn_consume), GEARMAN_TIMEOUT, GEARMAN_LOST_CONNECTION or
 * GEARMAN_INVALID_PACKET (closed in both cases). */
gearman_return_t lgc_conn_recv(struct lgc_universal *u, struct lgc_conn *conn,
                               struct pb_packet *pkt, size_t *used);

/* lgc_wait polls every connected server (POLLIN, plus POLLOUT when output is queued) for up to
 * the timeout and performs the ready reads and writes. Returns GEARMAN_SUCCESS,
 * GEARMAN_TIMEOUT, GEARMAN_NO_ACTIVE_FDS or GEARMAN_ERRNO. Connections that fail are closed. */
gearman_return_t lgc_wait(struct lgc_universal *u);

/* lgc_echo sends ECHO_REQ to every server and checks the replies; handler gets every other packet
 * that arrives meanwhile. */
typedef void (*lgc_packet_fn)(void *owner, struct lgc_conn *conn, const struct pb_packet *pkt);
gearman_return_t lgc_echo(struct lgc_universal *u, const void *data, size_t size,
                          lgc_packet_fn handler, void *owner);

/* ---------------------------------------------------------------- TLS (tls.c) */

/* lgc_tls_set turns TLS on or off for the connections made from now on and stores the files
 * (NULL or "": the environment variable's, else the default; see docs/LIBGEARMAN-COMPAT.md).
 * Drops the context built so far. Returns 0, or -1 when out of memory. */
int lgc_tls_set(struct lgc_universal *u, bool on, const char *ca_file, const char *cert_file,
                const char *key_file);

/* lgc_tls_copy copies from's TLS switch and files into u (for clones). Returns 0 or -1. */
int lgc_tls_copy(struct lgc_universal *u, const struct lgc_universal *from);

/* lgc_tls_reset frees the context (the next TLS connect builds it again). */
void lgc_tls_reset(struct lgc_universal *u);

/* lgc_tls_free frees the context and the file names. */
void lgc_tls_free(struct lgc_universal *u);

/* lgc_tls_handshake runs the TLS client handshake on conn's connected socket, waiting up to
 * timeout ms, and verifies the server's certificate (CA and host name) unless
 * LIBGEARMAN_COMPAT_SSL_VERIFY=none. Returns GEARMAN_SUCCESS (conn->ssl set),
 * GEARMAN_INVALID_ARGUMENT (a certificate file unusable), GEARMAN_COULD_NOT_CONNECT (handshake
 * failed), GEARMAN_TIMEOUT or GEARMAN_MEMORY_ALLOCATION_FAILURE, with the error recorded in u.
 * The socket itself stays open: the caller closes it. */
gearman_return_t lgc_tls_handshake(struct lgc_universal *u, struct lgc_conn *conn, int timeout);

/* lgc_tls_close sends close_notify once (never waits) and frees conn's TLS session. */
void lgc_tls_close(struct lgc_conn *conn);

/* lgc_tls_send and lgc_tls_recv are send(MSG_NOSIGNAL) and recv() through conn's TLS session:
 * bytes moved, 0 (recv: the server closed), or -1 with errno: EAGAIN to retry when the socket is
 * ready (recv sets conn->ssl_read_wants_write when that means writable), EPROTO for a TLS failure
 * (text in conn->ssl_error), or the socket's error. */
ssize_t lgc_tls_send(struct lgc_conn *conn, const void *data, size_t len);
ssize_t lgc_tls_recv(struct lgc_conn *conn, void *data, size_t len);

/* lgc_tls_pending reports whether conn's TLS session holds decrypted bytes not yet read (poll
 * cannot see them). */
bool lgc_tls_pending(const struct lgc_conn *conn);

/* ---------------------------------------------------------------- results and tasks */

/* struct gearman_result_st is an accumulated job result. */
struct gearman_result_st {
    char *value; /* owned, NUL-terminated at size, or NULL when empty */
    size_t size; /* bytes of result */
    size_t cap;  /* bytes allocated at value */
};

/* lgc_result_append appends bytes (keeping a NUL after them). Returns 0 or -1. */
int lgc_result_append(struct gearman_result_st *r, const void *data, size_t size);

/* lgc_result_free releases the value. */
void lgc_result_free(struct gearman_result_st *r);

/* enum lgc_task_kind says who created a task (which decides result buffering and freeing). */
enum lgc_task_kind {
    LGC_KIND_ADD_TASK, /* gearman_client_add_task*: freed by the user, or at finish with FREE_TASKS */
    LGC_KIND_EXECUTE,  /* gearman_execute: result accumulated, freed by the user */
    LGC_KIND_DO,       /* gearman_client_do*, job_status: internal, result accumulated */
};

/* enum lgc_task_state is where a task is in its life. */
enum lgc_task_state {
    LGC_TASK_NEW,       /* queued, not sent */
    LGC_TASK_SUBMITTED, /* sent, waiting for JOB_CREATED (or STATUS_RES) */
    LGC_TASK_WORKING,   /* created, waiting for the worker's results (foreground) */
    LGC_TASK_FINISHED,  /* done; result_rc says how */
};

/* enum lgc_event is what a reply packet did to a task (which callback to run). */
enum lgc_event {
    LGC_EV_NONE,      /* nothing for the user (packet ignored) */
    LGC_EV_CREATED,   /* JOB_CREATED */
    LGC_EV_DATA,      /* WORK_DATA */
    LGC_EV_WARNING,   /* WORK_WARNING */
    LGC_EV_STATUS,    /* WORK_STATUS or STATUS_RES */
    LGC_EV_COMPLETE,  /* WORK_COMPLETE */
    LGC_EV_EXCEPTION, /* WORK_EXCEPTION */
    LGC_EV_FAIL,      /* WORK_FAIL */
    LGC_EV_NOMEM,     /* the payload could not be stored */
};

struct lgc_client;

/* struct lgc_task is a submitted job or a status request. */
/* struct lgc_task_fns holds a client's task callbacks. Each task keeps a copy of the ones in force
 * when it was added, as libgearman does: setting a callback later does not reach it. */
struct lgc_task_fns {
    gearman_created_fn *created;          /* JOB_CREATED */
    gearman_data_fn *data;                /* WORK_DATA */
    gearman_warning_fn *warning;          /* WORK_WARNING */
    gearman_universal_status_fn *status;  /* WORK_STATUS, STATUS_RES */
    gearman_complete_fn *complete;        /* WORK_COMPLETE */
    gearman_exception_fn *exception;      /* WORK_EXCEPTION */
    gearman_fail_fn *fail;                /* WORK_FAIL */
};

struct lgc_task {
    gearman_task_st *shell;         /* the user's handle on this task */
    struct lgc_client *client;      /* owner */
    struct lgc_task *prev, *next;   /* the client's task list, in add order */
    enum lgc_task_kind kind;        /* who created it */
    enum lgc_task_state state;      /* life cycle */
    uint32_t cmd;                   /* SUBMIT_JOB* or GET_STATUS */
    bool background;                /* finishes at JOB_CREATED */
    struct lgc_buf packet;          /* the encoded request until it is queued on a connection */
    char *function;                 /* owned function name, NULL for a status task */
    char unique[GEARMAN_MAX_UNIQUE_SIZE + 1]; /* unique sent, NUL-terminated */
    char handle[GEARMAN_JOB_HANDLE_SIZE];      /* job handle, "" until known */
    struct lgc_conn *conn;          /* connection it was sent on, NULL before */
    unsigned conn_gen;              /* conn->generation when sent */
    void *context;                  /* user context */
    struct lgc_task_fns fns;        /* the client's callbacks when the task was added */
    bool is_known;                  /* per JOB_CREATED/STATUS_RES */
    bool is_running;                /* per WORK_* / STATUS_RES */
    uint32_t numerator;             /* last status numerator */
    uint32_t denominator;           /* last status denominator */
    gearman_return_t result_rc;     /* GEARMAN_UNKNOWN_STATE until finished */
    char *data;                     /* payload of the last packet, owned (NUL after data_size) */
    size_t data_size;               /* bytes at data */
    struct gearman_result_st result; /* accumulated result (EXECUTE and DO kinds) */
    struct gearman_result_st exception; /* WORK_EXCEPTION payload */
    bool in_callback;               /* a user callback for this task is running */
    bool free_requested;            /* gearman_task_free was called inside that callback */
};

/* lgc_task_apply applies one reply packet (already matched to t) to the task's fields and state:
 * stores the handle, flags, status and payload, accumulates the result for EXECUTE/DO tasks and
 * finishes the task (result_rc set) on a terminal packet. Pure: no I/O, no callbacks.
 * Returns the event to report to the user. */
enum lgc_event lgc_task_apply(struct lgc_task *t, const struct pb_packet *pkt);

/* lgc_task_fail finishes t with code (no callback), e.g. after an ERROR reply or a lost server. */
void lgc_task_fail(struct lgc_task *t, gearman_return_t code);

/* lgc_handle_matches reports whether a WORK_* packet's handle argument (len bytes; trailing NULs
 * ignored, as gearmand appends one to forwarded WORK_FAIL) equals handle. */
bool lgc_handle_matches(const char *handle, const char *arg, size_t len);

/* lgc_task_state_name returns a short name for a state. */
const char *lgc_task_state_name(enum lgc_task_state s);

#ifdef __cplusplus
}
#endif
#endif
