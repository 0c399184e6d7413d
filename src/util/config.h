/* SPDX-License-Identifier: BSD-3-Clause */
/* config: spurd's settings, their defaults, and the command-line / config-file parser. Pure. */
#ifndef SPUR_CONFIG_H
#define SPUR_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct opt_table;

#define CONFIG_MAX_LISTEN 16 /* -L may be given this many times */
#define CONFIG_MAX_ADMIN_ALLOW 32 /* --admin-allow may be given this many times (ACL_MAX_ADMIN) */
#define CONFIG_MAX_TAKEOVER 16 /* --takeover may be given this many times */
#define CONFIG_MAX_FILE_LINE 4096 /* longest config-file line, newline included */
#define CONFIG_MAX_BROADCAST 256 /* --broadcast may be given this many times */
#define CONFIG_MAX_RETRY 256 /* --retry may be given this many times */
#define STORE_TIMEOUT_DEFAULT 10.0 /* --store-timeout: seconds a batch may take, and a stop waits */

/* struct config_retry is one --retry=FUNC:COUNT:BACKOFF:MAX (a retry policy, jobx.h). */
struct config_retry {
    char *func;     /* the function name (owned) */
    uint32_t count; /* retries after the first failure, 1..1000 */
    double backoff; /* seconds before the first retry */
    double max;     /* the most seconds between two runs */
};

/* enum admin_shutdown_policy says who may run the admin shutdown command. */
enum admin_shutdown_policy {
    SHUTDOWN_LOCAL = 0, /* loopback and unix-socket connections only (default) */
    SHUTDOWN_ANY,       /* any connection */
    SHUTDOWN_NONE,      /* nobody: the command is refused */
};

/* enum ssl_verify says whether TLS listeners ask for and check client certificates. */
enum ssl_verify {
    SSL_VERIFY_CLIENT_NONE = 0, /* no certificate asked for (default, as gearmand) */
    SSL_VERIFY_CLIENT_OPTIONAL, /* asked for; one presented must verify against --ssl-ca-file */
    SSL_VERIFY_CLIENT_REQUIRE,  /* asked for and required: no certificate, no handshake */
};

/* struct config holds every setting; options_defaults (shell/options.h) fills it. Strings are
 * owned. */
struct config {
    /* listeners */
    char *listen[CONFIG_MAX_LISTEN]; /* -L addresses; none means all (IPv4 and IPv6) */
    int nlisten;                     /* entries in listen */
    int port;                        /* -p, 0 picks a free port */
    int backlog;                     /* -b, listen() backlog; 0: the kernel's maximum */
    char *unix_path;                 /* --unix, a unix-domain socket path, or NULL */
    char *port_file;                 /* --port-file: write the bound TCP port here */
    int listen_retry;                /* --listen-retry: seconds to retry a busy port, 0 = fail */

    /* TLS (transport_tls.h): on when ssl is set or ssl_listen has entries */
    int ssl;                         /* --ssl: the -p/-L listeners speak TLS, as gearmand */
    char *ssl_listen[CONFIG_MAX_LISTEN]; /* --ssl-listen ADDR:PORT: TLS-only listeners */
    int nssl_listen;                 /* entries in ssl_listen */
    char *ssl_certificate;           /* --ssl-certificate: PEM chain, server's first */
    char *ssl_key;                   /* --ssl-key: PEM private key */
    char *ssl_ca_file;               /* --ssl-ca-file: PEM CAs client certificates must chain to */
    enum ssl_verify ssl_verify_client; /* --ssl-verify-client */
    double ssl_handshake_timeout;    /* --ssl-handshake-timeout seconds, 0 = never */

    /* HTTP listener (http.h); off unless --http-port or -r http is given */
    int http_port;                   /* --http-port, -1 unset; 0 picks a free port */
    int http_protocol;               /* -r http (gearmand): HTTP on --http-port, default 8080 */
    char *http_listen[CONFIG_MAX_LISTEN]; /* --http-listen addresses; none means all */
    int nhttp_listen;                /* entries in http_listen */
    char *http_port_file;            /* --http-port-file: write the bound HTTP port here */
    size_t http_max_connections;     /* --http-max-connections: HTTP connections at once */
    size_t http_max_header;          /* --http-max-header-size: request line and headers */
    size_t http_max_body;            /* --http-max-body: request body; 0 = --max-packet-size */
    unsigned http_idle_timeout;      /* --http-idle-timeout seconds of an idle HTTP connection
                                        (not one waiting on its job), 0 = never */
    int http_admin;                  /* --http-admin: POST /admin runs one admin command */
    double http_request_timeout;     /* --http-request-timeout seconds for a request's line,
                                        headers and body to arrive; 0 = never */

    /* process */
    int daemon;                      /* -d */
    char *pid_file;                  /* -P, NULL for none */
    char *log_file;                  /* -l: "stderr", "none" or a path */
    int syslog;                      /* --syslog: also log to syslog(3) */
    int verbose;                     /* --verbose level (enum log_level) */
    char *user;                      /* -u: switch to this user after binding */
    int threads;                     /* -t: accepted for compatibility; spurd has one loop */
    long file_descriptors;           /* -f: RLIMIT_NOFILE to set, 0 to leave alone */
    int check_args;                  /* --check-args: parse, then exit 0 */

    /* job engine */
    int exceptions;                  /* --exceptions: every connection gets exceptions */
    int job_retries;                 /* -j: -1 unlimited, 0/1 no retry, N tries in all */
    int can_do_timeout_requeue;      /* --can-do-timeout=requeue: a job past its CAN_DO_TIMEOUT
                                        is re-queued as a lost job (counts against -j), as
                                        gearmand; 0 (fail, the default): it fails */
    int worker_wakeup;               /* -w: sleepers woken per job, 0 = all, -1 = one per ready job */
    double reply_batch;              /* --reply-batch: longest wait of a batched reply, seconds */
    double busy_poll;                /* --busy-poll: longest adaptive spin before sleeping, seconds */
    double grab_wait;                /* --grab-wait: seconds a GRAB finding no job waits for one
                                        before NO_JOB; 0 answers at once, as gearmand */
    char *job_handle_prefix;         /* --job-handle-prefix, default "H:<hostname>" */

    /* network behaviour */
    int keepalive_idle;              /* --keepalive-idle seconds, -1 = OS default */
    int keepalive_interval;          /* --keepalive-interval seconds, -1 = OS default */
    int keepalive_count;             /* --keepalive-count probes, -1 = OS default */
    int tcp_user_timeout;            /* --tcp-user-timeout seconds, 0 = OS default,
                                        -1 = derived from the keepalive options */

    /* limits */
    uint32_t max_packet;             /* --max-packet-size: largest binary body accepted */
    size_t max_line;                 /* --max-line-length: longest admin line, newline included */
    size_t max_output;               /* --max-output-buffer: unsent bytes before a close */
    size_t max_buffer_memory;        /* --max-buffer-memory: bytes all connections' input buffers
                                        and output queues may hold before the worst are closed;
                                        0 = no global bound */
    size_t max_connections;          /* --max-connections: accepted connections at once */
    size_t max_function;             /* --max-function-name: longest function name */
    size_t max_functions;            /* --max-functions: functions known at once */
    size_t max_failed_jobs;          /* --max-failed-jobs: the dead-letter list's bound */
    size_t max_waiting_jobs;         /* --max-waiting-jobs: jobs waiting for others (submit
                                        --after) at once; more are refused */
    size_t max_dependents;           /* --max-dependents: jobs that may wait for one job */
    struct config_retry retry[CONFIG_MAX_RETRY]; /* --retry policies, in order */
    int nretry;                      /* entries in retry */
    size_t max_client_id;            /* --max-client-id: longest SET_CLIENT_ID kept */
    double idle_timeout;             /* --idle-timeout seconds for a half-received packet, 0 off */

    /* admin */
    enum admin_shutdown_policy admin_shutdown; /* --admin-shutdown */
    char *admin_allow[CONFIG_MAX_ADMIN_ALLOW]; /* --admin-allow rules (acl.h principals),
                                                  checked by acl_new */
    int nadmin_allow;                /* entries in admin_allow */
    int admin_read_allowed;          /* --admin-read=allowed (default all: anyone may read) */
    char *policy;                    /* --policy: the function permissions file, NULL for none */
    char *check_policy;              /* --check-policy: validate this file, then exit */
    double shutdown_timeout;         /* --shutdown-timeout: graceful shutdown bound, seconds */

    /* durable store */
    char *store;                     /* --store=sqlite:PATH or postgres:CONNINFO, NULL: memory only */
    char *queue_type;                /* -q (gearmand): "builtin", "libsqlite3" or "Postgres" */
    char *sqlite_db;                 /* --libsqlite3-db */
    char *sqlite_table;              /* --libsqlite3-table */
    char *pg_conninfo;               /* --libpq-conninfo (for -q Postgres) */
    char *pg_table;                  /* --libpq-table: gearmand's table to import (-q Postgres) */
    int store_on_shutdown;           /* --store-queue-on-shutdown (accepted) */
    long store_max_pages;            /* --store-max-pages (testing): cap the store file, 0 = none */
    int store_sync_normal;           /* --store-sync=normal: no fsync per batch (kill -9 safe only) */
    int store_recover;               /* --store-recover: start on a damaged store with what is readable */
    double store_wait;               /* --store-wait: seconds a batch waits for an unavailable database */
    double store_timeout;            /* --store-timeout: seconds one write of a batch may take (past
                                        --store-wait) before its submits are refused, and the
                                        longest a stop waits for the store's thread */
    char *dump_file;                 /* --dump=FILE: write the store's jobs to FILE and exit */
    char *load_file;                 /* --load=FILE: add FILE's jobs to the store and exit */
    /* a postgres store shared by several servers (docs/HA.md) */
    char *server_id;                 /* --server-id, NULL: HOSTNAME:PORT */
    char *takeover[CONFIG_MAX_TAKEOVER]; /* --takeover=ID: dead servers whose jobs to claim at start */
    int ntakeover;                   /* how many */
    double takeover_after;           /* --takeover-after: claim a server's jobs after S s without lease */

    /* recurring schedules (sched.h) */
    char **schedules;                /* the config files' [schedule] lines, each the text of a
                                        `schedule add` (checked by schedule_parse) */
    int nschedules;                  /* entries in schedules */
    char *schedule_tz;               /* --schedule-tz: the time zone of cron schedules (TZ is set
                                        to it at start), NULL for the process's TZ */
    int schedule_catchup;            /* --schedule-catchup: 0 skip (default), 1 once */
    size_t max_schedules;            /* --max-schedules: schedules at once (default 10000) */

    /* broadcast functions (ext/broadcast.h) */
    char *broadcast[CONFIG_MAX_BROADCAST]; /* --broadcast=FUNC names (escaped form), in order */
    int nbroadcast;                  /* entries in broadcast */
    size_t broadcast_backlog;        /* --broadcast-backlog: copies that may wait for one worker */
};

/* enum config_help_section is a part of the --help text (struct opt's section). */
enum config_help_section {
    CONFIG_HELP_GEARMAND = 0, /* "Options with gearmand's names and meanings" */
    CONFIG_HELP_SPUR,         /* "Spur's own options" */
    CONFIG_HELP_SCHEDULE,     /* "Recurring schedules" */
};

/* config_options is the table of the server's own options (opt.h): listeners, process, engine,
 * limits, admin and the store manager. The transports (TLS), the HTTP front-end, the features
 * (retries, dependencies, schedules) and the store backends own their rows (their *_opt.c);
 * shell/options.c lists every table. The fields of every row are in struct config. */
extern const struct opt_table config_options;

/* config_defaults_with fills c with the defaults of the rows of tables (a NULL-terminated list)
 * and those no row holds (--verbose, --max-buffer-memory, --admin-shutdown); every other field
 * is 0. No allocation. A program takes every default with options_defaults (shell/options.h),
 * which hands it every table. */
void config_defaults_with(struct config *c, const struct opt_table *const *tables);

/* config_default_buffer_memory returns the --max-buffer-memory default: a quarter of the
 * physical memory, at least 256 MiB. */
size_t config_default_buffer_memory(void);

/* config_parse_with parses argv (argv[0] is the program name) against tables (a
 * NULL-terminated list: every module's, as shell/options.c assembles it)
 * into c, after the options of the config files named by --config-file=FILE or @FILE (none by
 * default; several are read in order). Later values win, so the command line overrides the files. A config file holds
 * options as on the command line, one or more per line, an option's value on its line; blank
 * lines and '#' comments are skipped and words are quoted as config_split_line says. Errors
 * in a file read "FILE:LINE: message"; an unreadable file "cannot read config file FILE:
 * strerror". Returns 0 on success; 1 when --help or --version was printed to out (exit 0);
 * -1 on an error, with a message in err (errlen bytes). */
int config_parse_with(struct config *c, const struct opt_table *const *tables, int argc,
                      char **argv, char *err, size_t errlen, FILE *out);

/* config_split_line splits one config-file line into words appended to *words (*nwords of
 * them; each word malloc'd, the caller frees them and the array, also on an error). Words are
 * separated by white space; a '#' that starts a word starts a comment to the end of the line;
 * '...' keeps everything up to the next ' as is; "..." does the same, except that \" and \\
 * stand for " and \; outside quotes a backslash keeps the next character as is. Quotes may
 * join parts of one word (--log-file="/my dir"/x.log) and "" is an empty word.
 * Returns 0, or -1 with a message in err (an unterminated quote, a backslash at the end). */
int config_split_line(const char *line, char ***words, int *nwords, char *err, size_t errlen);

/* config_tcp_user_timeout_ms returns the TCP_USER_TIMEOUT (milliseconds) for accepted sockets,
 * or 0 to leave the OS default: --tcp-user-timeout when given, else, when any keepalive option
 * is set, idle + interval * count (Linux defaults 7200, 75 and 9 for the unset ones). */
unsigned config_tcp_user_timeout_ms(const struct config *c);

/* config_make_absolute rewrites every relative file path in c (pid file, log file, port file,
 * unix socket, store and libsqlite3 database) as cwd + "/" + path, for a daemon that is about
 * to chdir("/"), and the policy file. Returns 0, or -1 when out of memory. */
int config_make_absolute(struct config *c, const char *cwd);

/* config_free frees the strings c owns. */
void config_free(struct config *c);

/* config_tls_enabled reports whether any listener speaks TLS (--ssl or --ssl-listen). */
static inline int config_tls_enabled(const struct config *c)
{
    return c->ssl || c->nssl_listen > 0;
}

/* config_split_hostport splits "ADDR:PORT" or "[ADDR6]:PORT" into host (hostlen bytes, "" for
 * all addresses when ADDR is empty or "*") and *port (0..65535). Returns 0, or -1 when s is not
 * of that form or host does not fit. */
int config_split_hostport(const char *s, char *host, size_t hostlen, int *port);

/* config_http_enabled reports whether the HTTP listener is on (--http-port or -r http). */
static inline int config_http_enabled(const struct config *c)
{
    return c->http_port >= 0 || c->http_protocol;
}

/* config_http_port returns the HTTP port to bind: --http-port, else gearmand's 8080. */
static inline int config_http_port(const struct config *c)
{
    return c->http_port >= 0 ? c->http_port : 8080;
}

/* config_http_max_body returns the largest HTTP request body accepted. */
static inline size_t config_http_max_body(const struct config *c)
{
    return c->http_max_body != 0 ? c->http_max_body : c->max_packet;
}

/* config_usage writes the --help text of the rows of tables (NULL-terminated) to out. */
void config_usage(const struct opt_table *const *tables, FILE *out);

/* config_parse_retry_numbers parses a retry policy's COUNT (0..1000), BACKOFF and MAX (seconds,
 * 0 <= BACKOFF <= MAX <= 2592000) for --retry and the admin 'retry'. Returns 0 or -1. */
int config_parse_retry_numbers(const char *count, const char *backoff, const char *max,
                               uint32_t *n, double *b, double *m);

#ifdef __cplusplus
}
#endif
#endif
