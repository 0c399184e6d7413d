/* SPDX-License-Identifier: BSD-3-Clause */
/* config: spurd's settings, their defaults, and the command-line / config-file parser. */
#include "spur_config.h"
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "schedule.h"
#include "store_pg_text.h"

size_t config_default_buffer_memory(void)
{
    const size_t floor = (size_t)256 << 20;
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return floor;
    unsigned long long quarter = (unsigned long long)pages * (unsigned long long)page / 4;
    if (quarter > SIZE_MAX)
        quarter = SIZE_MAX;
    return quarter > floor ? (size_t)quarter : floor;
}

/* buffer_memory_min is the smallest --max-buffer-memory that still lets one connection receive
 * a packet of the largest size (its input buffer can be twice the packet while it grows). */
static size_t buffer_memory_min(const struct config *c)
{
    return 2 * (size_t)c->max_packet + (64u << 10);
}

void config_defaults(struct config *c)
{
    memset(c, 0, sizeof *c);
    c->port = 4730;
    c->backlog = 0; /* the kernel's maximum (listen_backlog) */
    c->verbose = LOG_ERROR;
    c->threads = 0;
    c->job_retries = -1;
    c->worker_wakeup = -1;
    c->grab_wait = 0.002;
    c->busy_poll = 0.00005;
    c->reply_batch = 0.0002;
    c->store_timeout = STORE_TIMEOUT_DEFAULT;
    c->keepalive_idle = -1;
    c->keepalive_interval = -1;
    c->keepalive_count = -1;
    c->tcp_user_timeout = -1;
    c->max_packet = 64u << 20;
    c->max_line = 8192;
    c->max_output = 256u << 20;
    c->max_buffer_memory = config_default_buffer_memory();
    c->max_connections = 100000;
    c->max_function = 512;
    c->max_functions = 1000000;
    c->max_failed_jobs = 10000;
    c->max_waiting_jobs = 1000000;
    c->max_dependents = 100000;
    c->max_client_id = 127;
    c->idle_timeout = 0;
    c->admin_shutdown = SHUTDOWN_LOCAL;
    c->shutdown_timeout = 30;
    c->http_port = -1;
    c->ssl_handshake_timeout = 10;
    c->http_max_connections = 1024;
    c->http_max_header = 16u << 10;
    c->http_max_body = 0;
    c->http_idle_timeout = 60;
    c->http_request_timeout = 30;
    c->max_schedules = 10000;
}

enum {
    OPT_CHECK_ARGS = 1000,
    OPT_CONFIG_FILE,
    OPT_COREDUMP,
    OPT_EXCEPTIONS,
    OPT_HANDLE_PREFIX,
    OPT_HASH_BUCKETS,
    OPT_KEEPALIVE,
    OPT_KA_IDLE,
    OPT_KA_INTERVAL,
    OPT_KA_COUNT,
    OPT_VERBOSE,
    OPT_SYSLOG,
    OPT_UNIX,
    OPT_PORT_FILE,
    OPT_MAX_PACKET,
    OPT_MAX_LINE,
    OPT_MAX_OUTPUT,
    OPT_MAX_BUFFER_MEMORY,
    OPT_MAX_CONN,
    OPT_MAX_FUNCTION,
    OPT_MAX_FUNCTIONS,
    OPT_MAX_FAILED_JOBS,
    OPT_MAX_WAITING_JOBS,
    OPT_MAX_DEPENDENTS,
    OPT_RETRY,
    OPT_MAX_CLIENT_ID,
    OPT_IDLE_TIMEOUT,
    OPT_GRAB_WAIT,
    OPT_BUSY_POLL,
    OPT_REPLY_BATCH,
    OPT_CAN_DO_TIMEOUT,
    OPT_ADMIN_SHUTDOWN,
    OPT_ADMIN_ALLOW,
    OPT_ADMIN_READ,
    OPT_POLICY,
    OPT_CHECK_POLICY,
    OPT_SHUTDOWN_TIMEOUT,
    OPT_STORE,
    OPT_SQLITE_DB,
    OPT_SQLITE_TABLE,
    OPT_PG_CONNINFO,
    OPT_PG_TABLE,
    OPT_STORE_ON_SHUTDOWN,
    OPT_STORE_MAX_PAGES,
    OPT_STORE_SYNC,
    OPT_STORE_RECOVER,
    OPT_STORE_WAIT,
    OPT_STORE_TIMEOUT,
    OPT_DUMP,
    OPT_LOAD,
    OPT_SERVER_ID,
    OPT_TAKEOVER,
    OPT_TAKEOVER_AFTER,
    OPT_SSL,
    OPT_SSL_CA_FILE,
    OPT_SSL_CERT,
    OPT_SSL_KEY,
    OPT_SSL_LISTEN,
    OPT_SSL_VERIFY,
    OPT_SSL_HS_TIMEOUT,
    OPT_HTTP_PORT,
    OPT_HTTP_LISTEN,
    OPT_HTTP_PORT_FILE,
    OPT_HTTP_MAX_CONN,
    OPT_HTTP_MAX_HEADER,
    OPT_HTTP_MAX_BODY,
    OPT_HTTP_IDLE_TIMEOUT,
    OPT_HTTP_ADMIN,
    OPT_HTTP_REQUEST_TIMEOUT,
    OPT_LISTEN_RETRY,
    OPT_TCP_USER_TIMEOUT,
    OPT_SCHEDULE_TZ,
    OPT_SCHEDULE_CATCHUP,
    OPT_MAX_SCHEDULES,
};

static const struct option long_opts[] = {
    {"backlog", required_argument, NULL, 'b'},
    {"daemon", no_argument, NULL, 'd'},
    {"exceptions", no_argument, NULL, OPT_EXCEPTIONS},
    {"file-descriptors", required_argument, NULL, 'f'},
    {"help", no_argument, NULL, 'h'},
    {"job-retries", required_argument, NULL, 'j'},
    {"job-handle-prefix", required_argument, NULL, OPT_HANDLE_PREFIX},
    {"hashtable-buckets", required_argument, NULL, OPT_HASH_BUCKETS},
    {"keepalive", no_argument, NULL, OPT_KEEPALIVE},
    {"keepalive-idle", required_argument, NULL, OPT_KA_IDLE},
    {"keepalive-interval", required_argument, NULL, OPT_KA_INTERVAL},
    {"keepalive-count", required_argument, NULL, OPT_KA_COUNT},
    {"log-file", required_argument, NULL, 'l'},
    {"listen", required_argument, NULL, 'L'},
    {"port", required_argument, NULL, 'p'},
    {"pid-file", required_argument, NULL, 'P'},
    {"protocol", required_argument, NULL, 'r'},
    {"round-robin", no_argument, NULL, 'R'},
    {"queue-type", required_argument, NULL, 'q'},
    {"config-file", required_argument, NULL, OPT_CONFIG_FILE},
    {"syslog", no_argument, NULL, OPT_SYSLOG},
    {"coredump", no_argument, NULL, OPT_COREDUMP},
    {"threads", required_argument, NULL, 't'},
    {"user", required_argument, NULL, 'u'},
    {"verbose", required_argument, NULL, OPT_VERBOSE},
    {"version", no_argument, NULL, 'V'},
    {"worker-wakeup", required_argument, NULL, 'w'},
    {"check-args", no_argument, NULL, OPT_CHECK_ARGS},
    {"unix", required_argument, NULL, OPT_UNIX},
    {"port-file", required_argument, NULL, OPT_PORT_FILE},
    {"max-packet-size", required_argument, NULL, OPT_MAX_PACKET},
    {"max-line-length", required_argument, NULL, OPT_MAX_LINE},
    {"max-output-buffer", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-buffer-memory", required_argument, NULL, OPT_MAX_BUFFER_MEMORY},
    {"max-connections", required_argument, NULL, OPT_MAX_CONN},
    {"max-function-name", required_argument, NULL, OPT_MAX_FUNCTION},
    {"max-functions", required_argument, NULL, OPT_MAX_FUNCTIONS},
    {"max-failed-jobs", required_argument, NULL, OPT_MAX_FAILED_JOBS},
    {"max-waiting-jobs", required_argument, NULL, OPT_MAX_WAITING_JOBS},
    {"max-dependents", required_argument, NULL, OPT_MAX_DEPENDENTS},
    {"retry", required_argument, NULL, OPT_RETRY},
    {"max-client-id", required_argument, NULL, OPT_MAX_CLIENT_ID},
    {"idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT},
    {"grab-wait", required_argument, NULL, OPT_GRAB_WAIT},
    {"busy-poll", required_argument, NULL, OPT_BUSY_POLL},
    {"reply-batch", required_argument, NULL, OPT_REPLY_BATCH},
    {"can-do-timeout", required_argument, NULL, OPT_CAN_DO_TIMEOUT},
    {"admin-shutdown", required_argument, NULL, OPT_ADMIN_SHUTDOWN},
    {"admin-allow", required_argument, NULL, OPT_ADMIN_ALLOW},
    {"admin-read", required_argument, NULL, OPT_ADMIN_READ},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"check-policy", required_argument, NULL, OPT_CHECK_POLICY},
    {"shutdown-timeout", required_argument, NULL, OPT_SHUTDOWN_TIMEOUT},
    {"store", required_argument, NULL, OPT_STORE},
    {"libsqlite3-db", required_argument, NULL, OPT_SQLITE_DB},
    {"libsqlite3-table", required_argument, NULL, OPT_SQLITE_TABLE},
    {"libpq-conninfo", required_argument, NULL, OPT_PG_CONNINFO},
    {"libpq-table", required_argument, NULL, OPT_PG_TABLE},
    {"store-queue-on-shutdown", no_argument, NULL, OPT_STORE_ON_SHUTDOWN},
    {"store-max-pages", required_argument, NULL, OPT_STORE_MAX_PAGES},
    {"store-sync", required_argument, NULL, OPT_STORE_SYNC},
    {"store-recover", no_argument, NULL, OPT_STORE_RECOVER},
    {"store-wait", required_argument, NULL, OPT_STORE_WAIT},
    {"store-timeout", required_argument, NULL, OPT_STORE_TIMEOUT},
    {"dump", required_argument, NULL, OPT_DUMP},
    {"load", required_argument, NULL, OPT_LOAD},
    {"server-id", required_argument, NULL, OPT_SERVER_ID},
    {"takeover", required_argument, NULL, OPT_TAKEOVER},
    {"takeover-after", required_argument, NULL, OPT_TAKEOVER_AFTER},
    {"ssl", no_argument, NULL, OPT_SSL},
    {"ssl-ca-file", required_argument, NULL, OPT_SSL_CA_FILE},
    {"ssl-certificate", required_argument, NULL, OPT_SSL_CERT},
    {"ssl-key", required_argument, NULL, OPT_SSL_KEY},
    {"ssl-listen", required_argument, NULL, OPT_SSL_LISTEN},
    {"ssl-verify-client", required_argument, NULL, OPT_SSL_VERIFY},
    {"ssl-handshake-timeout", required_argument, NULL, OPT_SSL_HS_TIMEOUT},
    {"http-port", required_argument, NULL, OPT_HTTP_PORT},
    {"http-listen", required_argument, NULL, OPT_HTTP_LISTEN},
    {"http-port-file", required_argument, NULL, OPT_HTTP_PORT_FILE},
    {"http-max-connections", required_argument, NULL, OPT_HTTP_MAX_CONN},
    {"http-max-header-size", required_argument, NULL, OPT_HTTP_MAX_HEADER},
    {"http-max-body", required_argument, NULL, OPT_HTTP_MAX_BODY},
    {"http-idle-timeout", required_argument, NULL, OPT_HTTP_IDLE_TIMEOUT},
    {"http-admin", no_argument, NULL, OPT_HTTP_ADMIN},
    {"http-request-timeout", required_argument, NULL, OPT_HTTP_REQUEST_TIMEOUT},
    {"listen-retry", required_argument, NULL, OPT_LISTEN_RETRY},
    {"tcp-user-timeout", required_argument, NULL, OPT_TCP_USER_TIMEOUT},
    {"schedule-tz", required_argument, NULL, OPT_SCHEDULE_TZ},
    {"schedule-catchup", required_argument, NULL, OPT_SCHEDULE_CATCHUP},
    {"max-schedules", required_argument, NULL, OPT_MAX_SCHEDULES},
    {NULL, 0, NULL, 0},
};

void config_usage(FILE *out)
{
    fputs(
        "Usage: spurd [OPTIONS]\n"
        "Spur " PACKAGE_VERSION ", a Gearman-compatible job server.\n"
        "\n"
        "Options with gearmand's names and meanings:\n"
        "  -b, --backlog=N            listen() backlog (default: the kernel's maximum,\n"
        "                             net.core.somaxconn; gearmand's is 32)\n"
        "  -d, --daemon               detach and run in the background; start-up errors are\n"
        "                             printed and exit 1; without -l, logs go to syslog\n"
        "      --exceptions           enable WORK_EXCEPTION forwarding for every client\n"
        "  -f, --file-descriptors=N   set the open-file limit (RLIMIT_NOFILE)\n"
        "  -h, --help                 print this help and exit\n"
        "  -j, --job-retries=N        attempts after which a job whose worker is lost fails:\n"
        "                             -1 unlimited (default), 0 or 1 never retried, N handed\n"
        "                             out at most N times (fails on the N-th loss, as gearmand)\n"
        "      --job-handle-prefix=P  job handles are P:N (default H:<hostname>)\n"
        "      --hashtable-buckets=N  accepted and ignored: spurd's tables resize themselves\n"
        "      --keepalive            accepted: accepted sockets always get SO_KEEPALIVE\n"
        "      --keepalive-idle=S     TCP_KEEPIDLE for accepted sockets (default: OS)\n"
        "      --keepalive-interval=S TCP_KEEPINTVL for accepted sockets (default: OS)\n"
        "      --keepalive-count=N    TCP_KEEPCNT for accepted sockets (default: OS)\n"
        "  -l, --log-file=FILE        log to FILE, 'stderr' (default) or 'none'\n"
        "  -L, --listen=ADDR          address to listen on (repeatable; default all)\n"
        "  -p, --port=PORT            TCP port (default 4730, or $GEARMAND_PORT; 0 = any free)\n"
        "  -P, --pid-file=FILE        write the process id to FILE\n"
        "  -q, --queue-type=TYPE      builtin (memory), libsqlite3 or Postgres (durable)\n"
        "      --libsqlite3-db=FILE   SQLite file for -q libsqlite3\n"
        "      --libsqlite3-table=T   gearmand queue table to import (default gearman_queue)\n"
        "      --libpq-conninfo=S     libpq connection string for -q Postgres (default: libpq's\n"
        "                             defaults and PG* variables)\n"
        "      --libpq-table=T        gearmand queue table to import for -q Postgres (default\n"
        "                             queue)\n"
        "      --store-queue-on-shutdown  accepted; the store always writes as it goes\n"
        "      --ssl                  the -p/-L listeners speak TLS (docs/SECURITY.md); needs\n"
        "                             --ssl-certificate and --ssl-key\n"
        "      --ssl-certificate=F    the server's certificate chain (PEM, its own first)\n"
        "      --ssl-key=FILE         the server's private key (PEM)\n"
        "      --ssl-ca-file=FILE     CA certificates (PEM) client certificates are checked\n"
        "                             against (see --ssl-verify-client)\n"
        "  -r, --protocol=http        serve HTTP (docs/HTTP.md) on --http-port (default 8080)\n"
        "      --http-port=PORT       the HTTP port; given alone it also turns HTTP on (0 = any\n"
        "                             free port)\n"
        "  -R, --round-robin          accepted: round-robin across functions is always on\n"
        "      --config-file=FILE     read options from FILE first (also @FILE; repeatable): as on\n"
        "                             the command line, # comments, '' and \"\" quoting\n"
        "      --syslog               also log to syslog(3) (facility daemon)\n"
        "      --coredump             accepted and ignored\n"
        "  -t, --threads=N            accepted: spurd runs one event loop on one thread\n"
        "  -u, --user=USER            switch to USER after binding\n"
        "      --verbose=LEVEL        FATAL ALERT CRITICAL ERROR (default) WARNING NOTICE INFO DEBUG\n"
        "  -V, --version              print the version and exit\n"
        "  -w, --worker-wakeup=N      sleeping workers woken per new job: N, or 0 for all, as\n"
        "                             gearmand; unset (default): one per job that needs a worker\n"
        "      --check-args           check the options (and that the store's directory exists) and exit\n",
        out);
    fputs(
        "\n"
        "Spur's own options:\n"
        "      --unix=PATH            also listen on a unix-domain socket\n"
        "      --port-file=FILE       write the bound TCP port to FILE (useful with --port=0)\n"
        "      --ssl-listen=A:PORT    also listen for TLS only on address A, port PORT\n"
        "                             ([ADDR6]:PORT; repeatable), beside the plain -p/-L ones\n"
        "      --ssl-verify-client=M  none (default, as gearmand): no client certificate asked;\n"
        "                             optional: one presented must verify; require: a client\n"
        "                             without a verified certificate is refused\n"
        "      --ssl-handshake-timeout=S  close a TLS connection whose handshake is not done\n"
        "                             after S seconds (default 10; 0 = never)\n"
        "      --listen-retry=S       retry a busy port once a second for up to S seconds\n"
        "                             (default 0: fail at once)\n"
        "      --tcp-user-timeout=S   TCP_USER_TIMEOUT for accepted sockets: unacknowledged data\n"
        "                             older than S seconds closes the connection (0 = OS\n"
        "                             default; default: derived from --keepalive-*)\n"
        "      --http-listen=ADDR     address of the HTTP listener (repeatable; default all)\n"
        "      --http-port-file=FILE  write the bound HTTP port to FILE\n"
        "      --http-max-connections=N  HTTP connections at once (default 1024)\n"
        "      --http-max-header-size=N  request line and headers of an HTTP request, at most\n"
        "                             (default 16384; more is answered 431)\n"
        "      --http-max-body=N      largest HTTP request body (default: --max-packet-size;\n"
        "                             more is answered 413)\n"
        "      --http-idle-timeout=S  close an HTTP connection idle for S seconds, unless it\n"
        "                             waits on its job (default 60; 0 = never)\n"
        "      --http-request-timeout=S  close an HTTP connection whose request line, headers\n"
        "                             and body are not all in S seconds after the request\n"
        "                             began (default 30; 0 = never)\n"
        "      --http-admin           answer POST /admin: the body is one admin command, the\n"
        "                             answer its reply (--admin-allow applies; default off)\n",
        out);
    fputs(
        "      --store=sqlite:PATH    keep background jobs in a durable SQLite store\n"
        "      --store=postgres:CONNINFO  keep them in PostgreSQL (libpq connection string)\n"
        "      --store-sync=MODE      full (default): every batch is fsync'd before its replies;\n"
        "                             normal: no fsync, safe against kill -9 but not power loss\n"
        "      --store-max-pages=N    cap the store at N pages (to test a full disk)\n"
        "      --store-wait=S         postgres: a background submit waits up to S seconds for an\n"
        "                             unavailable database (default 0: QUEUE_ERROR at once)\n"
        "      --store-timeout=S      a batch not written within S seconds (after --store-wait) is\n"
        "                             given up: its submits get QUEUE_ERROR; a stop waits at most\n"
        "                             S seconds for the store (default 10; a hung database)\n",
        out);
    fputs(
        "      --server-id=ID         postgres: this server's id in a database shared by several\n"
        "                             servers (default HOSTNAME:PORT; docs/HA.md)\n"
        "      --takeover=ID          postgres: at start, claim and run the stored jobs of the\n"
        "                             dead server ID (refused while ID holds its lease; repeatable)\n"
        "      --takeover-after=S     postgres: claim the jobs of any server whose lease has not\n"
        "                             been renewed for S seconds (default 0: never)\n"
        "      --store-recover        start even if the store is damaged: rewrite it with every\n"
        "                             readable job, keep the damaged file as PATH.damaged-TIME\n"
        "      --dump=FILE            write the jobs of the store (--store, stopped server) to\n"
        "                             FILE as dump lines (- = stdout) and exit\n"
        "      --load=FILE            add the jobs of dump FILE (- = stdin) to the store, new\n"
        "                             handles, uniques already there skipped, and exit\n"
        "      --max-packet-size=N    largest packet body accepted (default 67108864)\n"
        "      --max-line-length=N    longest admin line, newline included (default 8192)\n"
        "      --max-output-buffer=N  unsent reply bytes before a connection is closed\n"
        "                             (default 268435456)\n"
        "      --max-buffer-memory=N  bytes all connections' unfinished input (partial TLS\n"
        "                             records too) and unsent replies may hold together; past\n"
        "                             it the connections that do not read, largest first, are\n"
        "                             closed (default: 1/4 of RAM, at least 256M; 0 = no\n"
        "                             global bound)\n"
        "      --max-connections=N    connections served at once (default 100000)\n"
        "      --max-function-name=N  longest function name (default 512)\n"
        "      --max-functions=N      functions known at once; more are refused (default 1000000)\n"
        "      --max-client-id=N      SET_CLIENT_ID is cut to N bytes (default 127)\n"
        "      --max-failed-jobs=N    jobs kept in the dead-letter list; the oldest are dropped\n"
        "                             past it (default 10000)\n"
        "      --max-waiting-jobs=N   jobs waiting for others (submit --after) at once; more\n"
        "                             are refused with WAITING_FULL (default 1000000)\n"
        "      --max-dependents=N     jobs that may wait for one job; more are refused with\n"
        "                             TOO_MANY_DEPENDENTS (default 100000)\n"
        "      --retry=FUNC:COUNT:BACKOFF:MAX  retry policy of FUNC: a background job that fails\n"
        "                             runs again up to COUNT times, after min(MAX, BACKOFF *\n"
        "                             2^(n-1)) seconds with jitter, then goes to the dead-letter\n"
        "                             list (repeatable; the admin 'retry' changes them)\n"
        "      --idle-timeout=S       close a connection that leaves a packet (or a TLS record)\n"
        "                             unfinished for S seconds (default 0: never)\n"
        "      --grab-wait=MS         a GRAB that finds no job waits up to MS milliseconds for\n"
        "                             one before NO_JOB (default 2; 0 answers at once)\n"
        "      --busy-poll=US         poll up to US microseconds before sleeping while input keeps\n"
        "                             arriving that soon; adaptive (default 50; 0 = never)\n"
        "      --reply-batch=US       a client waiting on several jobs may have its replies held up\n"
        "                             to US microseconds while jobs run, to write them together\n"
        "                             (default 200; 0 = write in every loop iteration)\n"
        "      --can-do-timeout=WHAT  a job whose worker passes its CAN_DO_TIMEOUT: fail\n"
        "                             (default) sends WORK_FAIL; requeue re-queues it as a lost\n"
        "                             job, counted against -j, as gearmand (a late result from\n"
        "                             the slow worker still finishes it)\n"
        "      --admin-shutdown=WHO   who may run 'shutdown': local (default), any, none\n",
        out);
    fputs(
        "      --admin-allow=RULE     who may run admin commands that change state (repeatable):\n"
        "                             unix, loopback, local, any, ADDR[/BITS], cert:NAME,\n"
        "                             listener:NAME (default: anyone; shutdown as above)\n"
        "      --admin-read=WHO       who may run read-only admin commands: all (default) or\n"
        "                             allowed (--admin-allow, else local connections)\n"
        "      --policy=FILE          function permissions: who may submit and CAN_DO which\n"
        "                             functions (re-read on SIGHUP; see SECURITY.md)\n"
        "      --check-policy=FILE    check a policy file, print the result, exit (0 or 1)\n"
        "      --shutdown-timeout=S   longest wait of 'shutdown graceful' (default 30)\n",
        out);
    fputs(
        "Recurring schedules ('schedule add', the config file's [schedule] section):\n"
        "      --schedule-tz=ZONE     time zone of cron schedules, e.g. Europe/Berlin (TZ is set\n"
        "                             to it at start; default: the process's TZ)\n"
        "      --schedule-catchup=P   firings missed while the server was down: skip (default)\n"
        "                             or once (one firing at start for all that were missed)\n"
        "      --max-schedules=N      schedules at once (default 10000)\n",
        out);
}

/* errf formats an error message into err. */
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* parse_long parses a whole decimal integer within [lo, hi]. Returns 0 or -1. */
static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* parse_size parses a whole decimal size within [lo, hi], with an optional k/M/G suffix. */
static int parse_size(const char *s, unsigned long long lo, unsigned long long hi,
                      unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s)
        return -1;
    unsigned long long mul = 1;
    if (*end == 'k' || *end == 'K')
        mul = 1ull << 10, end++;
    else if (*end == 'm' || *end == 'M')
        mul = 1ull << 20, end++;
    else if (*end == 'g' || *end == 'G')
        mul = 1ull << 30, end++;
    if (*end != '\0' || v > hi / mul || v * mul < lo || v * mul > hi)
        return -1;
    *out = v * mul;
    return 0;
}

static int parse_seconds(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9)
        return -1;
    *out = v;
    return 0;
}

int config_parse_retry_numbers(const char *count, const char *backoff, const char *max,
                               uint32_t *n, double *b, double *m)
{
    long v;
    if (parse_long(count, 0, 1000, &v) != 0 || parse_seconds(backoff, b) != 0 ||
        parse_seconds(max, m) != 0 || *b > 2592000.0 || *m > 2592000.0 || *b > *m)
        return -1;
    *n = (uint32_t)v;
    return 0;
}

/* parse_retry parses FUNC:COUNT:BACKOFF:MAX (the last three colons split it, so FUNC may hold
 * colons) into r, COUNT at least 1. Returns 0 or -1. */
static int parse_retry(const char *s, struct config_retry *r)
{
    const char *c[3];
    const char *end = s + strlen(s);
    for (int i = 2; i >= 0; i--) {
        const char *p = end;
        while (p > s && p[-1] != ':')
            p--;
        if (p == s)
            return -1;
        c[i] = p - 1;
        end = p - 1;
    }
    size_t fl = (size_t)(c[0] - s);
    if (fl == 0 || fl > 512)
        return -1;
    char nums[3][64];
    for (int i = 0; i < 3; i++) {
        const char *from = c[i] + 1, *to = i < 2 ? c[i + 1] : s + strlen(s);
        if ((size_t)(to - from) >= sizeof nums[i])
            return -1;
        memcpy(nums[i], from, (size_t)(to - from));
        nums[i][to - from] = '\0';
    }
    uint32_t n;
    double b, m;
    if (config_parse_retry_numbers(nums[0], nums[1], nums[2], &n, &b, &m) != 0 || n == 0)
        return -1;
    /* FUNC is kept in the escaped form of the admin listings (%09 is a TAB); jobx decodes it
     * and checks it with func_name_ok, the one name check of every entry point */
    char *f = strndup(s, fl);
    if (f == NULL)
        return -1;
    *r = (struct config_retry){f, n, b, m};
    return 0;
}

static void set_str(char **dst, const char *src)
{
    free(*dst);
    *dst = strdup(src);
}

/* word_add appends the n bytes at w as a new word to *words. Returns 0, or -1 out of memory. */
static int word_add(char ***words, int *nwords, const char *w, size_t n)
{
    char **nw = realloc(*words, sizeof **words * (size_t)(*nwords + 1));
    if (nw == NULL)
        return -1;
    *words = nw;
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, w, n);
    copy[n] = '\0';
    nw[(*nwords)++] = copy;
    return 0;
}

int config_split_line(const char *line, char ***words, int *nwords, char *err, size_t errlen)
{
    size_t len = strlen(line);
    char *w = malloc(len + 1); /* a word is never longer than its line */
    if (w == NULL)
        return errf(err, errlen, "out of memory");
    size_t wl = 0;
    int inword = 0;           /* a word has begun (it may still be empty: "") */
    char quote = 0;           /* the open quote, or 0 */
    int rc = 0;
    for (const char *p = line;; p++) {
        char ch = *p;
        if (quote != 0) {
            if (ch == '\0') {
                rc = errf(err, errlen, "unterminated %s quote",
                          quote == '"' ? "double" : "single");
                break;
            }
            if (ch == quote) {
                quote = 0;
            } else if (quote == '"' && ch == '\\' && (p[1] == '"' || p[1] == '\\')) {
                w[wl++] = *++p;
            } else {
                w[wl++] = ch;
            }
            continue;
        }
        if (ch == '\0' || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' ||
            (ch == '#' && !inword)) {
            if (inword && word_add(words, nwords, w, wl) != 0) {
                rc = errf(err, errlen, "out of memory");
                break;
            }
            inword = 0;
            wl = 0;
            if (ch == '\0' || ch == '#') /* '#' starting a word: a comment to the end */
                break;
            continue;
        }
        inword = 1;
        if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (ch == '\\') {
            if (p[1] == '\0' || p[1] == '\n' || p[1] == '\r') {
                rc = errf(err, errlen, "backslash at the end of the line");
                break;
            }
            w[wl++] = *++p;
        } else {
            w[wl++] = ch;
        }
    }
    free(w);
    return rc;
}

/* struct cfiles lists the config files named on the command line, in order (borrowed). */
struct cfiles {
    const char **name; /* the paths, pointing into argv */
    int n;             /* entries in name */
};

/* add_cfile appends path to files. Returns 0, or -1 out of memory. */
static int add_cfile(struct cfiles *files, const char *path)
{
    const char **nn = realloc(files->name, sizeof *nn * (size_t)(files->n + 1));
    if (nn == NULL)
        return -1;
    files->name = nn;
    nn[files->n++] = path;
    return 0;
}

static int apply(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out,
                 struct cfiles *files, int in_file);

/* free_words frees n words and the array. */
static void free_words(char **words, int n)
{
    for (int i = 0; i < n; i++)
        free(words[i]);
    free(words);
}

/* The sections of a config file: options (from the start, or after "[options]"), and after
 * "[schedule]" one schedule per line (the text of an admin `schedule add`). */
enum { SECTION_OPTIONS = 0, SECTION_SCHEDULE };

/* trim returns line[0..*len) without surrounding blanks and its line ending. */
static const char *trim(const char *line, size_t *len)
{
    size_t n = *len;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        n--;
    while (n > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        n--;
    }
    *len = n;
    return line;
}

/* section_line reports whether line is a section header: 1 (and *section set) if it is, 0 if
 * not, -1 for an unknown section. */
static int section_line(const char *line, size_t len, int *section)
{
    const char *t = trim(line, &len);
    if (len < 2 || t[0] != '[' || t[len - 1] != ']')
        return 0;
    if (len == 9 && memcmp(t, "[options]", 9) == 0)
        *section = SECTION_OPTIONS;
    else if (len == 10 && memcmp(t, "[schedule]", 10) == 0)
        *section = SECTION_SCHEDULE;
    else
        return -1;
    return 1;
}

/* add_schedule_line appends one [schedule] line to c->schedules after checking it (blank lines
 * and '#' comments are skipped). Returns 0, or -1 with a message in err. */
static int add_schedule_line(struct config *c, const char *line, size_t len, char *err,
                             size_t errlen)
{
    const char *t = trim(line, &len);
    if (len == 0 || t[0] == '#')
        return 0;
    struct schedule s;
    if (schedule_parse(t, len, &s, err, errlen) != 0)
        return -1;
    schedule_free(&s);
    char **ns = realloc(c->schedules, sizeof *ns * ((size_t)c->nschedules + 1));
    if (ns == NULL)
        return errf(err, errlen, "out of memory");
    c->schedules = ns;
    ns[c->nschedules] = malloc(len + 1);
    if (ns[c->nschedules] == NULL)
        return errf(err, errlen, "out of memory");
    memcpy(ns[c->nschedules], t, len);
    ns[c->nschedules++][len] = '\0';
    return 0;
}

/* tz_known reports whether zone names a time zone: "UTC", or a file of the zoneinfo database
 * (an absolute path, or a name relative to /usr/share/zoneinfo without ".."). */
static int tz_known(const char *zone)
{
    if (strcmp(zone, "UTC") == 0)
        return 1;
    if (zone[0] == '\0' || strstr(zone, "..") != NULL || strlen(zone) > 200)
        return 0;
    char path[256];
    snprintf(path, sizeof path, "%s%s", zone[0] == '/' ? "" : "/usr/share/zoneinfo/", zone);
    return access(path, R_OK) == 0;
}

/* apply_file reads the config file at path line by line and applies each line's options to c.
 * Errors are "PATH:LINE: message", or "cannot read config file PATH: reason". Returns 0 or -1. */
static int apply_file(struct config *c, const char *path, char *err, size_t errlen, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return errf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;
    int rc = 0;
    int section = SECTION_OPTIONS;
    char why[400];
    errno = 0;
    while ((n = getline(&line, &cap, f)) != -1) {
        lineno++;
        if ((size_t)n > CONFIG_MAX_FILE_LINE) {
            rc = errf(err, errlen, "%s:%d: line longer than %d bytes", path, lineno,
                      CONFIG_MAX_FILE_LINE);
            break;
        }
        if (memchr(line, '\0', (size_t)n) != NULL) {
            rc = errf(err, errlen, "%s:%d: NUL byte in the line", path, lineno);
            break;
        }
        int sec = section_line(line, (size_t)n, &section);
        if (sec < 0) {
            rc = errf(err, errlen, "%s:%d: unknown section (known: [options], [schedule])", path,
                      lineno);
            break;
        }
        if (sec > 0)
            continue;
        if (section == SECTION_SCHEDULE) {
            if (add_schedule_line(c, line, (size_t)n, why, sizeof why) != 0) {
                rc = errf(err, errlen, "%s:%d: %s", path, lineno, why);
                break;
            }
            continue;
        }
        char **words = NULL;
        int nwords = 0;
        if (config_split_line(line, &words, &nwords, why, sizeof why) != 0) {
            free_words(words, nwords);
            rc = errf(err, errlen, "%s:%d: %s", path, lineno, why);
            break;
        }
        if (nwords > 0) {
            char **argv = calloc((size_t)nwords + 2, sizeof *argv);
            if (argv == NULL) {
                free_words(words, nwords);
                rc = errf(err, errlen, "out of memory");
                break;
            }
            argv[0] = (char *)"spurd";
            memcpy(argv + 1, words, sizeof *words * (size_t)nwords);
            int r = apply(c, nwords + 1, argv, why, sizeof why, out, NULL, 1);
            free(argv);
            free_words(words, nwords);
            if (r != 0) {
                rc = r < 0 ? errf(err, errlen, "%s:%d: %s", path, lineno, why) : r;
                break;
            }
        }
        errno = 0;
    }
    if (rc == 0 && ferror(f))
        rc = errf(err, errlen, "cannot read config file %s: %s", path,
                  strerror(errno != 0 ? errno : EIO));
    free(line);
    fclose(f);
    return rc;
}

/* apply parses argv (argv[0] is skipped) into c. in_file: argv is one line of a config file,
 * where another config file may not be named. files, when not NULL, collects the config files
 * named (--config-file=FILE or @FILE) instead of ignoring them. Returns 0, 1 after --help or
 * --version, or -1 with a message in err. */
static int apply(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out,
                 struct cfiles *files, int in_file)
{
    long v;
    unsigned long long sz;
    double d;
    int opt;
    optind = 0; /* GNU getopt: reinitialise */
    opterr = 0;
    /* "-": a word that is not an option comes back as opt 1, in order (for @FILE) */
    while ((opt = getopt_long(argc, argv, "-:b:df:hj:l:L:p:P:q:r:Rt:u:Vw:", long_opts, NULL)) !=
           -1) {
        switch (opt) {
        case 1:
            if (optarg[0] == '@' && optarg[1] != '\0' && !in_file) {
                if (files != NULL && add_cfile(files, optarg + 1) != 0)
                    return errf(err, errlen, "out of memory");
                break;
            }
            if (in_file && optarg[0] != '-' && strchr(optarg, '=') != NULL)
                return errf(err, errlen, "unexpected word '%s' (write --%s)", optarg, optarg);
            return errf(err, errlen, "unexpected argument '%s'", optarg);
        case 'b':
            if (parse_long(optarg, 1, INT_MAX, &v) != 0)
                return errf(err, errlen, "invalid --backlog value '%s'", optarg);
            c->backlog = (int)v;
            break;
        case 'd': c->daemon = 1; break;
        case OPT_EXCEPTIONS: c->exceptions = 1; break;
        case 'f':
            if (parse_long(optarg, 0, LONG_MAX, &v) != 0)
                return errf(err, errlen, "invalid --file-descriptors value '%s'", optarg);
            c->file_descriptors = v;
            break;
        case 'h': config_usage(out); return 1;
        case 'V': fprintf(out, "spurd %s\n", PACKAGE_VERSION); return 1;
        case 'j':
            if (parse_long(optarg, -1, 255, &v) != 0)
                return errf(err, errlen, "invalid --job-retries value '%s' (-1..255)", optarg);
            c->job_retries = (int)v;
            break;
        case OPT_HANDLE_PREFIX:
            if (optarg[0] == '\0' || strlen(optarg) > 40)
                return errf(err, errlen, "--job-handle-prefix must be 1 to 40 bytes");
            set_str(&c->job_handle_prefix, optarg);
            break;
        case OPT_HASH_BUCKETS:
            if (parse_long(optarg, 1, LONG_MAX, &v) != 0)
                return errf(err, errlen, "invalid --hashtable-buckets value '%s'", optarg);
            break;
        case OPT_KEEPALIVE: break;
        case OPT_KA_IDLE:
        case OPT_KA_INTERVAL:
        case OPT_KA_COUNT:
            if (parse_long(optarg, -1, 32767, &v) != 0 || v == 0)
                return errf(err, errlen, "invalid keepalive value '%s' (-1 or 1..32767)", optarg);
            if (opt == OPT_KA_IDLE)
                c->keepalive_idle = (int)v;
            else if (opt == OPT_KA_INTERVAL)
                c->keepalive_interval = (int)v;
            else
                c->keepalive_count = (int)v;
            break;
        case 'l': set_str(&c->log_file, optarg); break;
        case 'L':
            if (c->nlisten == CONFIG_MAX_LISTEN)
                return errf(err, errlen, "too many --listen addresses (at most %d)",
                            CONFIG_MAX_LISTEN);
            c->listen[c->nlisten++] = strdup(optarg);
            break;
        case 'p':
            if (parse_long(optarg, 0, 65535, &v) != 0)
                return errf(err, errlen, "invalid --port value '%s'", optarg);
            c->port = (int)v;
            break;
        case 'P': set_str(&c->pid_file, optarg); break;
        case 'q':
            if (strcasecmp(optarg, "builtin") != 0 && strcasecmp(optarg, "libsqlite3") != 0 &&
                strcasecmp(optarg, "Postgres") != 0)
                return errf(err, errlen,
                            "unsupported --queue-type '%s' (builtin, libsqlite3 or Postgres)",
                            optarg);
            set_str(&c->queue_type, optarg);
            break;
        case 'r':
            if (strcasecmp(optarg, "http") != 0)
                return errf(err, errlen, "--protocol=%s is not supported by spurd (only http)",
                            optarg);
            c->http_protocol = 1;
            break;
        case 'R': break;
        case OPT_CONFIG_FILE: /* read before the command line */
            if (in_file)
                return errf(err, errlen, "--config-file cannot be used in a config file");
            if (files != NULL && add_cfile(files, optarg) != 0)
                return errf(err, errlen, "out of memory");
            break;
        case OPT_SYSLOG: c->syslog = 1; break;
        case OPT_COREDUMP: break;
        case 't':
            if (parse_long(optarg, 0, 1024, &v) != 0)
                return errf(err, errlen, "invalid --threads value '%s'", optarg);
            c->threads = (int)v;
            break;
        case 'u': set_str(&c->user, optarg); break;
        case OPT_VERBOSE: {
            int lvl = log_level_parse(optarg);
            if (lvl < 0)
                return errf(err, errlen, "invalid --verbose level '%s'", optarg);
            c->verbose = lvl;
            break;
        }
        case 'w':
            if (parse_long(optarg, 0, 65535, &v) != 0)
                return errf(err, errlen, "invalid --worker-wakeup value '%s'", optarg);
            c->worker_wakeup = (int)v;
            break;
        case OPT_CHECK_ARGS: c->check_args = 1; break;
        case OPT_UNIX: set_str(&c->unix_path, optarg); break;
        case OPT_LISTEN_RETRY:
            if (parse_long(optarg, 0, 86400, &v) != 0)
                return errf(err, errlen, "invalid --listen-retry '%s' (seconds, 0..86400)", optarg);
            c->listen_retry = (int)v;
            break;
        case OPT_TCP_USER_TIMEOUT:
            if (parse_long(optarg, 0, 4000000, &v) != 0)
                return errf(err, errlen, "invalid --tcp-user-timeout '%s' (seconds, 0..4000000)",
                            optarg);
            c->tcp_user_timeout = (int)v;
            break;
        case OPT_PORT_FILE: set_str(&c->port_file, optarg); break;
        case OPT_MAX_PACKET:
            if (parse_size(optarg, 1024, UINT32_MAX, &sz) != 0)
                return errf(err, errlen, "invalid --max-packet-size '%s' (1024..4294967295)",
                            optarg);
            c->max_packet = (uint32_t)sz;
            break;
        case OPT_MAX_LINE:
            if (parse_size(optarg, 64, 1u << 30, &sz) != 0)
                return errf(err, errlen, "invalid --max-line-length '%s' (64..1G)", optarg);
            c->max_line = (size_t)sz;
            break;
        case OPT_MAX_OUTPUT:
            if (parse_size(optarg, 4096, 1ull << 40, &sz) != 0)
                return errf(err, errlen, "invalid --max-output-buffer '%s'", optarg);
            c->max_output = (size_t)sz;
            break;
        case OPT_MAX_BUFFER_MEMORY:
            if (parse_size(optarg, 0, 1ull << 50, &sz) != 0)
                return errf(err, errlen, "invalid --max-buffer-memory '%s'", optarg);
            c->max_buffer_memory = (size_t)sz;
            break;
        case OPT_MAX_CONN:
            if (parse_size(optarg, 1, 10000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-connections '%s'", optarg);
            c->max_connections = (size_t)sz;
            break;
        case OPT_MAX_FUNCTION:
            if (parse_size(optarg, 1, 65535, &sz) != 0)
                return errf(err, errlen, "invalid --max-function-name '%s'", optarg);
            c->max_function = (size_t)sz;
            break;
        case OPT_MAX_FUNCTIONS:
            if (parse_size(optarg, 1, 100000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-functions '%s'", optarg);
            c->max_functions = (size_t)sz;
            break;
        case OPT_MAX_FAILED_JOBS:
            if (parse_size(optarg, 0, 100000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-failed-jobs '%s'", optarg);
            c->max_failed_jobs = (size_t)sz;
            break;
        case OPT_MAX_WAITING_JOBS:
            if (parse_size(optarg, 1, 100000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-waiting-jobs '%s' (1..100000000)", optarg);
            c->max_waiting_jobs = (size_t)sz;
            break;
        case OPT_MAX_DEPENDENTS:
            if (parse_size(optarg, 1, 10000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-dependents '%s' (1..10000000)", optarg);
            c->max_dependents = (size_t)sz;
            break;
        case OPT_RETRY:
            if (c->nretry == CONFIG_MAX_RETRY)
                return errf(err, errlen, "too many --retry policies (at most %d)",
                            CONFIG_MAX_RETRY);
            if (parse_retry(optarg, &c->retry[c->nretry]) != 0)
                return errf(err, errlen,
                            "invalid --retry '%s' (FUNC:COUNT:BACKOFF:MAX, COUNT 1..1000, "
                            "0 <= BACKOFF <= MAX <= 2592000 seconds)", optarg);
            c->nretry++;
            break;
        case OPT_MAX_CLIENT_ID:
            if (parse_size(optarg, 1, 65535, &sz) != 0)
                return errf(err, errlen, "invalid --max-client-id '%s'", optarg);
            c->max_client_id = (size_t)sz;
            break;
        case OPT_IDLE_TIMEOUT:
            if (parse_seconds(optarg, &d) != 0)
                return errf(err, errlen, "invalid --idle-timeout '%s'", optarg);
            c->idle_timeout = d;
            break;
        case OPT_GRAB_WAIT:
            if (parse_seconds(optarg, &d) != 0 || d > 1000)
                return errf(err, errlen, "invalid --grab-wait '%s' (milliseconds, 0..1000)",
                            optarg);
            c->grab_wait = d / 1000;
            break;
        case OPT_BUSY_POLL:
            if (parse_long(optarg, 0, 100000, &v) != 0)
                return errf(err, errlen, "invalid --busy-poll '%s' (microseconds, 0..100000)",
                            optarg);
            c->busy_poll = (double)v / 1e6;
            break;
        case OPT_REPLY_BATCH:
            if (parse_long(optarg, 0, 1000000, &v) != 0)
                return errf(err, errlen, "invalid --reply-batch '%s' (microseconds, 0..1000000)",
                            optarg);
            c->reply_batch = (double)v / 1e6;
            break;
        case OPT_CAN_DO_TIMEOUT:
            if (strcmp(optarg, "fail") == 0)
                c->can_do_timeout_requeue = 0;
            else if (strcmp(optarg, "requeue") == 0)
                c->can_do_timeout_requeue = 1;
            else
                return errf(err, errlen, "invalid --can-do-timeout '%s' (fail, requeue)", optarg);
            break;
        case OPT_ADMIN_SHUTDOWN:
            if (strcmp(optarg, "local") == 0)
                c->admin_shutdown = SHUTDOWN_LOCAL;
            else if (strcmp(optarg, "any") == 0)
                c->admin_shutdown = SHUTDOWN_ANY;
            else if (strcmp(optarg, "none") == 0)
                c->admin_shutdown = SHUTDOWN_NONE;
            else
                return errf(err, errlen, "invalid --admin-shutdown '%s' (local, any, none)",
                            optarg);
            break;
        case OPT_ADMIN_ALLOW:
            if (c->nadmin_allow == CONFIG_MAX_ADMIN_ALLOW)
                return errf(err, errlen, "too many --admin-allow rules (at most %d)",
                            CONFIG_MAX_ADMIN_ALLOW);
            c->admin_allow[c->nadmin_allow++] = strdup(optarg);
            break;
        case OPT_ADMIN_READ:
            if (strcmp(optarg, "all") == 0)
                c->admin_read_allowed = 0;
            else if (strcmp(optarg, "allowed") == 0)
                c->admin_read_allowed = 1;
            else
                return errf(err, errlen, "invalid --admin-read '%s' (all, allowed)", optarg);
            break;
        case OPT_POLICY: set_str(&c->policy, optarg); break;
        case OPT_CHECK_POLICY: set_str(&c->check_policy, optarg); break;
        case OPT_SHUTDOWN_TIMEOUT:
            if (parse_seconds(optarg, &d) != 0)
                return errf(err, errlen, "invalid --shutdown-timeout '%s'", optarg);
            c->shutdown_timeout = d;
            break;
        case OPT_STORE:
            if ((strncmp(optarg, "sqlite:", 7) != 0 || optarg[7] == '\0') &&
                strncmp(optarg, "postgres:", 9) != 0)
                return errf(err, errlen, "invalid --store '%s' (sqlite:PATH or postgres:CONNINFO)",
                            optarg);
            set_str(&c->store, optarg);
            break;
        case OPT_SQLITE_DB: set_str(&c->sqlite_db, optarg); break;
        case OPT_SQLITE_TABLE: set_str(&c->sqlite_table, optarg); break;
        case OPT_PG_CONNINFO: set_str(&c->pg_conninfo, optarg); break;
        case OPT_PG_TABLE:
            if (!store_pg_valid_ident(optarg))
                return errf(err, errlen,
                            "invalid --libpq-table '%s' (letters, digits and _, at most %d bytes)",
                            optarg, STORE_PG_IDENT_MAX);
            set_str(&c->pg_table, optarg);
            break;
        case OPT_STORE_ON_SHUTDOWN: c->store_on_shutdown = 1; break;
        case OPT_STORE_SYNC:
            if (strcmp(optarg, "full") == 0)
                c->store_sync_normal = 0;
            else if (strcmp(optarg, "normal") == 0)
                c->store_sync_normal = 1;
            else
                return errf(err, errlen, "invalid --store-sync '%s' (full or normal)", optarg);
            break;
        case OPT_STORE_RECOVER: c->store_recover = 1; break;
        case OPT_DUMP:
        case OPT_LOAD: /* an action of the command line: a server's config file must not turn
                          every start into a dump or load */
            if (in_file)
                return errf(err, errlen, "--%s cannot be used in a config file",
                            opt == OPT_DUMP ? "dump" : "load");
            set_str(opt == OPT_DUMP ? &c->dump_file : &c->load_file, optarg);
            break;
        case OPT_STORE_WAIT:
            if (parse_seconds(optarg, &d) != 0 || d > 3600)
                return errf(err, errlen, "invalid --store-wait '%s' (0 to 3600 seconds)", optarg);
            c->store_wait = d;
            break;
        case OPT_STORE_TIMEOUT:
            if (parse_seconds(optarg, &d) != 0 || d < 0.1 || d > 3600)
                return errf(err, errlen, "invalid --store-timeout '%s' (0.1 to 3600 seconds)",
                            optarg);
            c->store_timeout = d;
            break;
        case OPT_SERVER_ID:
            if (!store_pg_valid_server_id(optarg))
                return errf(err, errlen, "invalid --server-id '%s' (1 to %d letters, digits and "
                            "._:@-)", optarg, STORE_PG_SERVER_ID_MAX);
            set_str(&c->server_id, optarg);
            break;
        case OPT_TAKEOVER:
            if (!store_pg_valid_server_id(optarg))
                return errf(err, errlen, "invalid --takeover '%s' (a server id: 1 to %d letters, "
                            "digits and ._:@-)", optarg, STORE_PG_SERVER_ID_MAX);
            if (c->ntakeover == CONFIG_MAX_TAKEOVER)
                return errf(err, errlen, "too many --takeover ids (at most %d)", CONFIG_MAX_TAKEOVER);
            c->takeover[c->ntakeover++] = strdup(optarg);
            break;
        case OPT_TAKEOVER_AFTER:
            if (parse_seconds(optarg, &d) != 0 || d > 86400 || (d > 0 && d < 1))
                return errf(err, errlen, "invalid --takeover-after '%s' (0, or 1 to 86400 seconds)",
                            optarg);
            c->takeover_after = d;
            break;
        case OPT_STORE_MAX_PAGES:
            if (parse_long(optarg, 0, LONG_MAX, &v) != 0)
                return errf(err, errlen, "invalid --store-max-pages '%s'", optarg);
            c->store_max_pages = v;
            break;
        case OPT_SSL: c->ssl = 1; break;
        case OPT_SSL_CA_FILE: set_str(&c->ssl_ca_file, optarg); break;
        case OPT_SSL_CERT: set_str(&c->ssl_certificate, optarg); break;
        case OPT_SSL_KEY: set_str(&c->ssl_key, optarg); break;
        case OPT_SSL_LISTEN: {
            char host[256];
            int port;
            if (config_split_hostport(optarg, host, sizeof host, &port) != 0)
                return errf(err, errlen, "invalid --ssl-listen '%s' (ADDR:PORT or [ADDR6]:PORT)",
                            optarg);
            if (c->nssl_listen == CONFIG_MAX_LISTEN)
                return errf(err, errlen, "too many --ssl-listen addresses (at most %d)",
                            CONFIG_MAX_LISTEN);
            c->ssl_listen[c->nssl_listen++] = strdup(optarg);
            break;
        }
        case OPT_SSL_VERIFY:
            if (strcmp(optarg, "none") == 0)
                c->ssl_verify_client = SSL_VERIFY_CLIENT_NONE;
            else if (strcmp(optarg, "optional") == 0)
                c->ssl_verify_client = SSL_VERIFY_CLIENT_OPTIONAL;
            else if (strcmp(optarg, "require") == 0)
                c->ssl_verify_client = SSL_VERIFY_CLIENT_REQUIRE;
            else
                return errf(err, errlen,
                            "invalid --ssl-verify-client '%s' (none, optional or require)", optarg);
            break;
        case OPT_SSL_HS_TIMEOUT:
            if (parse_seconds(optarg, &d) != 0 || d > 86400)
                return errf(err, errlen, "invalid --ssl-handshake-timeout '%s' (seconds, 0..86400)",
                            optarg);
            c->ssl_handshake_timeout = d;
            break;
        case OPT_HTTP_PORT:
            if (parse_long(optarg, 0, 65535, &v) != 0)
                return errf(err, errlen, "invalid --http-port value '%s'", optarg);
            c->http_port = (int)v;
            break;
        case OPT_HTTP_LISTEN:
            if (c->nhttp_listen == CONFIG_MAX_LISTEN)
                return errf(err, errlen, "too many --http-listen addresses (at most %d)",
                            CONFIG_MAX_LISTEN);
            c->http_listen[c->nhttp_listen++] = strdup(optarg);
            break;
        case OPT_HTTP_PORT_FILE: set_str(&c->http_port_file, optarg); break;
        case OPT_HTTP_MAX_CONN:
            if (parse_size(optarg, 1, 1000000, &sz) != 0)
                return errf(err, errlen, "invalid --http-max-connections '%s' (1..1000000)",
                            optarg);
            c->http_max_connections = (size_t)sz;
            break;
        case OPT_HTTP_MAX_HEADER:
            if (parse_size(optarg, 1024, 1u << 20, &sz) != 0)
                return errf(err, errlen, "invalid --http-max-header-size '%s' (1k..1M)", optarg);
            c->http_max_header = (size_t)sz;
            break;
        case OPT_HTTP_MAX_BODY:
            if (parse_size(optarg, 1, UINT32_MAX, &sz) != 0)
                return errf(err, errlen, "invalid --http-max-body '%s' (1..4294967295)", optarg);
            c->http_max_body = (size_t)sz;
            break;
        case OPT_HTTP_ADMIN: c->http_admin = 1; break;
        case OPT_HTTP_IDLE_TIMEOUT:
            if (parse_long(optarg, 0, 86400, &v) != 0)
                return errf(err, errlen, "invalid --http-idle-timeout '%s' (seconds, 0..86400)",
                            optarg);
            c->http_idle_timeout = (unsigned)v;
            break;
        case OPT_HTTP_REQUEST_TIMEOUT:
            if (parse_seconds(optarg, &d) != 0 || d > 86400)
                return errf(err, errlen, "invalid --http-request-timeout '%s' (seconds, 0..86400)",
                            optarg);
            c->http_request_timeout = d;
            break;
        case OPT_SCHEDULE_TZ:
            if (!tz_known(optarg))
                return errf(err, errlen, "unknown --schedule-tz '%s' (a zone of "
                            "/usr/share/zoneinfo such as Europe/Berlin, or UTC)", optarg);
            set_str(&c->schedule_tz, optarg);
            break;
        case OPT_SCHEDULE_CATCHUP:
            if (strcmp(optarg, "skip") == 0)
                c->schedule_catchup = 0;
            else if (strcmp(optarg, "once") == 0)
                c->schedule_catchup = 1;
            else
                return errf(err, errlen, "invalid --schedule-catchup '%s' (skip or once)", optarg);
            break;
        case OPT_MAX_SCHEDULES:
            if (parse_size(optarg, 1, 1000000, &sz) != 0)
                return errf(err, errlen, "invalid --max-schedules '%s' (1..1000000)", optarg);
            c->max_schedules = (size_t)sz;
            break;
        case ':':
            return errf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
        default:
            return errf(err, errlen, "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return errf(err, errlen, "unexpected argument '%s'", argv[optind]);
    return 0;
}

int config_parse(struct config *c, int argc, char **argv, char *err, size_t errlen, FILE *out)
{
    /* a first pass over the command line, into a scratch config, finds the config files (as
     * getopt sees them: abbreviations included) and reports command-line errors first */
    struct cfiles files = {NULL, 0};
    struct config scratch;
    config_defaults(&scratch);
    int rc = apply(&scratch, argc, argv, err, errlen, out, &files, 0);
    config_free(&scratch);
    /* the files' options first, in order, so the command line wins */
    for (int i = 0; rc == 0 && i < files.n; i++)
        rc = apply_file(c, files.name[i], err, errlen, out);
    free(files.name);
    if (rc == 0)
        rc = apply(c, argc, argv, err, errlen, out, NULL, 0);
    if (rc == 0) {
        if (c->queue_type && strcasecmp(c->queue_type, "libsqlite3") == 0 && c->sqlite_db == NULL)
            return errf(err, errlen, "-q libsqlite3 needs --libsqlite3-db=FILE");
        if (config_tls_enabled(c) && (c->ssl_certificate == NULL || c->ssl_key == NULL))
            return errf(err, errlen, "--ssl and --ssl-listen need --ssl-certificate and --ssl-key");
        if (c->ssl_verify_client != SSL_VERIFY_CLIENT_NONE && c->ssl_ca_file == NULL)
            return errf(err, errlen, "--ssl-verify-client=%s needs --ssl-ca-file",
                        c->ssl_verify_client == SSL_VERIFY_CLIENT_REQUIRE ? "require" : "optional");
        if (config_http_max_body(c) > c->max_packet)
            return errf(err, errlen, "--http-max-body must be at most --max-packet-size");
        if (c->max_output < (size_t)c->max_packet + 4096)
            return errf(err, errlen,
                        "--max-output-buffer must be at least --max-packet-size + 4096");
        if (c->max_buffer_memory != 0 && c->max_buffer_memory < buffer_memory_min(c)) {
            if (c->max_buffer_memory != config_default_buffer_memory())
                return errf(err, errlen,
                            "--max-buffer-memory must be 0 or at least 2 x --max-packet-size "
                            "+ 64k");
            c->max_buffer_memory = buffer_memory_min(c); /* the default follows the packet size */
        }
    }
    return rc;
}

int config_split_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *h = s;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return -1;
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
            return -1; /* none, or an IPv6 address without brackets */
        hl = (size_t)(colon - s);
    }
    long v;
    if (parse_long(colon + 1, 0, 65535, &v) != 0 || hl >= hostlen)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (strcmp(host, "*") == 0)
        host[0] = '\0';
    *port = (int)v;
    return 0;
}

unsigned config_tcp_user_timeout_ms(const struct config *c)
{
    if (c->tcp_user_timeout >= 0)
        return (unsigned)c->tcp_user_timeout * 1000u;
    if (c->keepalive_idle < 0 && c->keepalive_interval < 0 && c->keepalive_count < 0)
        return 0;
    unsigned long long idle = c->keepalive_idle > 0 ? (unsigned)c->keepalive_idle : 7200u;
    unsigned long long intvl = c->keepalive_interval > 0 ? (unsigned)c->keepalive_interval : 75u;
    unsigned long long cnt = c->keepalive_count > 0 ? (unsigned)c->keepalive_count : 9u;
    unsigned long long ms = (idle + intvl * cnt) * 1000u;
    return ms > UINT_MAX ? UINT_MAX : (unsigned)ms;
}

/* absolute replaces *p (when set and relative) with its absolute form. */
static int absolute(char **p, const char *cwd)
{
    if (*p == NULL || (*p)[0] == '/')
        return 0;
    char *a = file_absolute(*p, cwd);
    if (a == NULL)
        return -1;
    free(*p);
    *p = a;
    return 0;
}

int config_make_absolute(struct config *c, const char *cwd)
{
    if (c->log_file != NULL && strcmp(c->log_file, "stderr") != 0 &&
        strcmp(c->log_file, "none") != 0 && absolute(&c->log_file, cwd) != 0)
        return -1;
    if (absolute(&c->pid_file, cwd) != 0 || absolute(&c->port_file, cwd) != 0 ||
        absolute(&c->http_port_file, cwd) != 0 || absolute(&c->policy, cwd) != 0 ||
        absolute(&c->ssl_certificate, cwd) != 0 || absolute(&c->ssl_key, cwd) != 0 ||
        absolute(&c->ssl_ca_file, cwd) != 0 ||
        absolute(&c->unix_path, cwd) != 0 || absolute(&c->sqlite_db, cwd) != 0)
        return -1;
    if (c->store != NULL && strncmp(c->store, "sqlite:", 7) == 0 &&
        c->store[7] != '/') { /* "sqlite:" + a relative path */
        char *a = file_absolute(c->store + 7, cwd);
        char *s = a ? malloc(strlen(a) + 8) : NULL;
        if (s == NULL) {
            free(a);
            return -1;
        }
        memcpy(s, "sqlite:", 7);
        strcpy(s + 7, a);
        free(a);
        free(c->store);
        c->store = s;
    }
    return 0;
}

void config_free(struct config *c)
{
    for (int i = 0; i < c->nlisten; i++)
        free(c->listen[i]);
    c->nlisten = 0;
    for (int i = 0; i < c->nhttp_listen; i++)
        free(c->http_listen[i]);
    c->nhttp_listen = 0;
    memset(c->http_listen, 0, sizeof c->http_listen);
    free(c->http_port_file);
    c->http_port_file = NULL;
    for (int i = 0; i < c->nssl_listen; i++)
        free(c->ssl_listen[i]);
    c->nssl_listen = 0;
    memset(c->ssl_listen, 0, sizeof c->ssl_listen);
    free(c->ssl_certificate);
    free(c->ssl_key);
    free(c->ssl_ca_file);
    c->ssl_certificate = c->ssl_key = c->ssl_ca_file = NULL;
    free(c->unix_path);
    free(c->port_file);
    free(c->pid_file);
    free(c->log_file);
    free(c->user);
    free(c->job_handle_prefix);
    free(c->store);
    free(c->queue_type);
    free(c->sqlite_db);
    free(c->sqlite_table);
    free(c->pg_conninfo);
    free(c->pg_table);
    free(c->dump_file);
    free(c->load_file);
    c->dump_file = c->load_file = NULL;
    for (int i = 0; i < c->nadmin_allow; i++)
        free(c->admin_allow[i]);
    c->nadmin_allow = 0;
    for (int i = 0; i < c->nretry; i++)
        free(c->retry[i].func);
    c->nretry = 0;
    free(c->policy);
    free(c->check_policy);
    c->policy = c->check_policy = NULL;
    free(c->server_id);
    c->server_id = NULL;
    for (int i = 0; i < c->nschedules; i++)
        free(c->schedules[i]);
    free(c->schedules);
    c->schedules = NULL;
    c->nschedules = 0;
    free(c->schedule_tz);
    c->schedule_tz = NULL;
    for (int i = 0; i < c->ntakeover; i++)
        free(c->takeover[i]);
    c->ntakeover = 0;
    memset(c->takeover, 0, sizeof c->takeover);
    memset(c->listen, 0, sizeof c->listen);
    c->unix_path = c->port_file = c->pid_file = c->log_file = c->user = NULL;
    c->job_handle_prefix = c->store = c->queue_type = c->sqlite_db = c->sqlite_table = c->pg_conninfo =
        c->pg_table = NULL;
}
