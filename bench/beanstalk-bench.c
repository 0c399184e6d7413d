/* SPDX-License-Identifier: BSD-3-Clause */
/* beanstalk-bench: a load generator for beanstalkd, the closest non-Gearman peer of spurd (a C,
 * single-threaded job server), in the shapes of spur-bench so that bench/run.sh can put the
 * two side by side. It speaks beanstalkd's text protocol over non-blocking sockets driven by one
 * epoll loop, pipelines its commands, checks every reply and counts anomalies, and prints the
 * same RESULT line as spur-bench.
 *
 *   bg-submit  --clients connections each keep --window `put`s in flight; latency is the put to
 *              its INSERTED (the acknowledgement); nothing consumes the jobs.
 *   rt         --clients connections each keep --window jobs in flight; --workers connections
 *              `reserve` a job, check its body and `delete` it (the delete and the next reserve
 *              in one write); a client's slot frees when the worker's delete is acknowledged.
 *              Latency is the put to that DELETED: receive and acknowledge, one hop less than a
 *              Gearman round trip (beanstalkd never tells the producer).
 *   drain      spur-bench's drain: --clients connections put --jobs jobs (--window in flight
 *              each) and nothing consumes until every put is acknowledged; then --workers
 *              connections reserve/delete them all (timed: the drain rate). With --server-pid,
 *              the server's VmRSS before the first put and once every put is acknowledged gives
 *              its resident bytes per queued job; its `stats` must list no job afterwards.
 *              Defaults as spur-bench's drain: 1,000,000 jobs, 4 clients, 4 workers, window 64.
 *
 * Every body is 64 bytes (--payload-size) generated from the job's number, which it carries in
 * its first 16 bytes, so a worker checks that it got a job of this run, whole, and only once. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "procstat.h"

#define RBUF 65536 /* read buffer per connection */

/* struct opts holds the command line. */
struct opts {
    const char *scenario; /* bg-submit, rt or drain */
    const char *host;     /* server address */
    int port;             /* server port */
    long jobs;            /* jobs to put */
    int clients;          /* producer connections */
    int workers;          /* consumer connections (rt) */
    int window;           /* puts in flight per producer */
    int payload;          /* body bytes, at least 16 */
    int server_pid;       /* sample the server's CPU time (and VmRSS in drain), or 0 */
    const char *label;    /* copied into RESULT as server= */
    double timeout;       /* wall-time bound of the run, seconds */
    double stall;         /* give up after this long without a reply */
};

/* struct bconn is one connection: a producer or a consumer. */
struct bconn {
    int fd;          /* the socket */
    int worker;      /* 1 for a consumer */
    int idx;         /* producer index (its slots) */
    char *wbuf;      /* bytes to send */
    size_t wlen;     /* bytes in wbuf */
    size_t wcap;     /* wbuf capacity */
    char rbuf[RBUF]; /* bytes received, not yet parsed */
    size_t rlen;     /* bytes in rbuf */
    long *fifo;      /* producer: job numbers of puts awaiting INSERTED, in order */
    size_t fhead;    /* producer: first entry of fifo */
    size_t fcount;   /* producer: entries in fifo */
    int inflight;    /* producer: jobs not yet finished (rt) or acknowledged (bg-submit) */
    long reserved;   /* consumer: the job it holds, -1 if none */
    int pending;     /* consumer: replies awaited (DELETED, RESERVED) */
};

/* global run state; the counts at -1 take the scenario's default (parse) */
static struct opts o = {"rt", "127.0.0.1", 11300, -1, -1, -1, -1, 64, 0, "beanstalkd", 600, 15};
static long next_job;       /* the next job number to put */
static long done;           /* jobs finished */
static long reserved_total; /* RESERVED replies received */
static long anomalies;      /* wrong, unexpected or error replies */
static double *sent_at;     /* per job: when its put was queued */
static int *owner;          /* per job: its producer */
static unsigned char *seen; /* per job: finished already */
static double *lat;         /* latencies of finished jobs, seconds */
static struct bconn *conns; /* producers first, then consumers */
static int nconns;
static int epfd;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("beanstalk-bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

static void anomaly(const char *fmt, ...)
{
    va_list ap;
    if (anomalies++ < 5) {
        va_start(ap, fmt);
        fputs("beanstalk-bench: anomaly: ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
    }
}

/* server_cpu returns the server's utime+stime in seconds, or -1. */
static double server_cpu(void)
{
    long long ns = procstat_cpu_ns(o.server_pid);
    return ns < 0 ? -1 : (double)ns / 1e9;
}

/* server_rss returns the server's VmRSS in bytes (/proc/PID/status), or -1. */
static long long server_rss(void)
{
    return procstat_rss(o.server_pid);
}

/* body fills b with job j's payload: its number in 16 digits, then bytes derived from it. */
static void body(long j, char *b)
{
    char head[17];
    snprintf(head, sizeof head, "%016ld", j);
    memcpy(b, head, 16);
    for (int i = 16; i < o.payload; i++)
        b[i] = (char)('a' + (unsigned)(j * 31 + i * 7) % 26);
}

static void out_append(struct bconn *c, const char *p, size_t n)
{
    if (c->wlen + n > c->wcap) {
        size_t cap = c->wcap ? c->wcap : 4096;
        while (cap < c->wlen + n)
            cap *= 2;
        c->wbuf = realloc(c->wbuf, cap);
        if (c->wbuf == NULL)
            die("out of memory");
        c->wcap = cap;
    }
    memcpy(c->wbuf + c->wlen, p, n);
    c->wlen += n;
}

/* put_next queues the next job's put on producer c, if jobs remain. */
static void put_next(struct bconn *c, double now)
{
    if (next_job >= o.jobs)
        return;
    long j = next_job++;
    char line[64], b[65536];
    int n = snprintf(line, sizeof line, "put 1024 0 60 %d\r\n", o.payload);
    out_append(c, line, (size_t)n);
    body(j, b);
    memcpy(b + o.payload, "\r\n", 2);
    out_append(c, b, (size_t)o.payload + 2);
    sent_at[j] = now;
    owner[j] = c->idx;
    c->fifo[(c->fhead + c->fcount) % (size_t)o.window] = j;
    c->fcount++;
    c->inflight++;
}

/* finish records job j as finished at now, and lets its producer put another. */
static void finish(long j, double now)
{
    if (seen[j]) {
        anomaly("job %ld finished twice", j);
        return;
    }
    seen[j] = 1;
    lat[done++] = now - sent_at[j];
    struct bconn *p = &conns[owner[j]];
    p->inflight--;
    put_next(p, now);
}

static void flush_out(struct bconn *c)
{
    while (c->wlen > 0) {
        ssize_t n = write(c->fd, c->wbuf, c->wlen);
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            die("write: %s", strerror(errno));
        }
        memmove(c->wbuf, c->wbuf + n, c->wlen - (size_t)n);
        c->wlen -= (size_t)n;
    }
    struct epoll_event ev = {.events = EPOLLIN | (c->wlen ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* producer_line handles one reply line on producer c: INSERTED <id>. */
static void producer_line(struct bconn *c, const char *line, double now)
{
    if (c->fcount == 0 || strncmp(line, "INSERTED ", 9) != 0) {
        anomaly("producer got '%.40s'", line);
        return;
    }
    long j = c->fifo[c->fhead];
    c->fhead = (c->fhead + 1) % (size_t)o.window;
    c->fcount--;
    if (strcmp(o.scenario, "rt") != 0) /* bg-submit, or drain's queueing phase */
        finish(j, now);
}

/* worker_reply handles one reply on consumer c; returns the bytes it used, 0 if incomplete. */
static size_t worker_reply(struct bconn *c, const char *p, size_t len, double now)
{
    const char *eol = memchr(p, '\n', len);
    if (eol == NULL)
        return 0;
    size_t ll = (size_t)(eol - p) + 1;
    if (c->pending <= 0)
        anomaly("consumer got an unexpected reply '%.40s'", p);
    c->pending--;
    if (strncmp(p, "DELETED\r\n", 9) == 0) {
        if (c->reserved < 0)
            anomaly("DELETED without a reserved job");
        else
            finish(c->reserved, now);
        c->reserved = -1;
        return ll;
    }
    unsigned long long id;
    int bytes;
    if (sscanf(p, "RESERVED %llu %d", &id, &bytes) != 2) {
        anomaly("consumer got '%.40s'", p);
        return ll;
    }
    if (len < ll + (size_t)bytes + 2)
        return 0;
    const char *b = p + ll;
    char want[65536];
    long j = -1;
    if (bytes == o.payload) {
        char num[17];
        memcpy(num, b, 16);
        num[16] = 0;
        j = strtol(num, NULL, 10);
    }
    if (j < 0 || j >= next_job || (body(j, want), memcmp(want, b, (size_t)bytes) != 0)) {
        anomaly("wrong body for beanstalk job %llu", id);
        j = -1;
    }
    c->reserved = j;
    reserved_total++;
    char cmd[64];
    int n = snprintf(cmd, sizeof cmd, "delete %llu\r\n", id);
    out_append(c, cmd, (size_t)n);
    c->pending++;
    if (reserved_total < o.jobs) { /* more to come: ask for the next one in the same write */
        out_append(c, "reserve\r\n", 9);
        c->pending++;
    }
    return ll + (size_t)bytes + 2;
}

/* on_read reads what c has and handles every complete reply. Returns 0, or -1 on EOF. */
static int on_read(struct bconn *c, double now)
{
    for (;;) {
        ssize_t n = read(c->fd, c->rbuf + c->rlen, RBUF - c->rlen);
        if (n == 0)
            return -1;
        if (n < 0) {
            if (errno == EAGAIN || errno == EINTR)
                break;
            return -1;
        }
        c->rlen += (size_t)n;
        size_t off = 0;
        while (off < c->rlen) {
            size_t used;
            if (c->worker) {
                used = worker_reply(c, c->rbuf + off, c->rlen - off, now);
            } else {
                char *eol = memchr(c->rbuf + off, '\n', c->rlen - off);
                used = eol ? (size_t)(eol - (c->rbuf + off)) + 1 : 0;
                if (used)
                    producer_line(c, c->rbuf + off, now);
            }
            if (used == 0)
                break;
            off += used;
        }
        memmove(c->rbuf, c->rbuf + off, c->rlen - off);
        c->rlen -= off;
        if (c->rlen == RBUF)
            die("a reply larger than %d bytes", RBUF);
    }
    return 0;
}

static int connect_to(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)o.port)};
    if (fd < 0 || inet_pton(AF_INET, o.host, &sa.sin_addr) != 1)
        die("bad --host %s", o.host);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0)
        die("connect %s:%d: %s", o.host, o.port, strerror(errno));
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    return fd;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double p)
{
    if (done == 0)
        return 0;
    long i = (long)(p * (double)(done - 1) + 0.5);
    return lat[i] * 1e6;
}

static void usage(void)
{
    puts("Usage: beanstalk-bench [--scenario=rt|bg-submit|drain] [--port=N] [--host=IPV4]\n"
         "  [--jobs=N] [--clients=N] [--workers=N] [--window=N] [--payload-size=N]\n"
         "  [--server-pid=PID] [--label=TEXT] [--timeout=S] [--stall=S]\n"
         "A load generator for beanstalkd: pipelined put (bg-submit), put with reserve/delete\n"
         "workers (rt), or put them all, then reserve/delete them all (drain: drain jobs/s and,\n"
         "with --server-pid, the server's RSS per queued job). Defaults: rt and bg-submit 20000\n"
         "jobs, 1 client, 1 worker, window 1; drain 1000000 jobs, 4 clients, 4 workers, window\n"
         "64; payload 64 bytes. Prints a RESULT line like spur-bench's. Exit 0 ok, 1 anomalies\n"
         "or unfinished, 2 usage or setup error.");
}

static void parse(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *a = argv[i], *v = strchr(a, '=');
        if (strcmp(a, "--help") == 0) {
            usage();
            exit(0);
        }
        if (v == NULL)
            die("unknown argument '%s' (see --help)", a);
        v++;
        if (strncmp(a, "--scenario=", 11) == 0) o.scenario = v;
        else if (strncmp(a, "--host=", 7) == 0) o.host = v;
        else if (strncmp(a, "--port=", 7) == 0) o.port = atoi(v);
        else if (strncmp(a, "--jobs=", 7) == 0) o.jobs = atol(v);
        else if (strncmp(a, "--clients=", 10) == 0) o.clients = atoi(v);
        else if (strncmp(a, "--workers=", 10) == 0) o.workers = atoi(v);
        else if (strncmp(a, "--window=", 9) == 0) o.window = atoi(v);
        else if (strncmp(a, "--payload-size=", 15) == 0) o.payload = atoi(v);
        else if (strncmp(a, "--server-pid=", 13) == 0) o.server_pid = atoi(v);
        else if (strncmp(a, "--label=", 8) == 0) o.label = v;
        else if (strncmp(a, "--timeout=", 10) == 0) o.timeout = atof(v);
        else if (strncmp(a, "--stall=", 8) == 0) o.stall = atof(v);
        else die("unknown argument '%s' (see --help)", a);
    }
    int rt = strcmp(o.scenario, "rt") == 0, drain = strcmp(o.scenario, "drain") == 0;
    int bg = strcmp(o.scenario, "bg-submit") == 0;
    if (!rt && !drain && !bg)
        die("--scenario must be rt, bg-submit or drain");
    if (o.jobs < 0)
        o.jobs = drain ? 1000000 : 20000;
    if (o.clients < 0)
        o.clients = drain ? 4 : 1;
    if (o.workers < 0)
        o.workers = drain ? 4 : 1;
    if (o.window < 0)
        o.window = drain ? 64 : 1;
    if (o.jobs < 1 || o.clients < 1 || o.window < 1 || (!bg && o.workers < 1) || o.payload < 16 ||
        o.payload > 60000 || o.timeout <= 0 || o.stall <= 0)
        die("counts must be positive; --payload-size 16..60000");
    if (bg)
        o.workers = 0;
}

/* start_conns sends the first commands of connections [from, to): each producer's --window
 * puts, each consumer's reserve. */
static void start_conns(int from, int to, double now)
{
    for (int i = from; i < to; i++) {
        struct bconn *c = &conns[i];
        if (c->worker) {
            out_append(c, "reserve\r\n", 9);
            c->pending = 1;
        } else {
            for (int k = 0; k < o.window; k++)
                put_next(c, now);
        }
        flush_out(c);
    }
}

/* loop_until drives the loop until done reaches target, or a bound is hit (--timeout since
 * start, --stall without a reply). Returns 1 if reached, with *t_end its time. */
static int loop_until(long target, double start, double *t_end)
{
    struct epoll_event evs[64];
    double last = now_s();
    while (done < target) {
        int n = epoll_wait(epfd, evs, 64, 200);
        double now = now_s();
        if (n > 0)
            last = now;
        for (int i = 0; i < n; i++) {
            struct bconn *c = evs[i].data.ptr;
            if ((evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && on_read(c, now) != 0) {
                anomaly("the server closed a connection");
                return 0;
            }
        }
        for (int i = 0; i < nconns; i++)
            if (conns[i].wlen > 0)
                flush_out(&conns[i]);
        if (now - start > o.timeout || now - last > o.stall || anomalies > 100000)
            return 0;
    }
    *t_end = now_s();
    return 1;
}

/* run drives rt or bg-submit until every job finished or a bound is hit; returns 1 if finished. */
static int run(double *t0, double *t1)
{
    *t0 = now_s();
    start_conns(0, nconns, *t0);
    return loop_until(o.jobs, *t0, t1);
}

/* struct drain_result is what the drain scenario measured. */
struct drain_result {
    long queued;          /* puts acknowledged (INSERTED) */
    double q_secs;        /* the queueing phase: first put to the last INSERTED */
    double d_secs;        /* the drain phase: first reserve to the last DELETED */
    double cpu[3];        /* server CPU seconds: start, queued, drained (-1 unknown) */
    long long rss[3];     /* server VmRSS bytes: before, queued, drained (-1 unknown) */
    long left;            /* jobs the server's stats still lists after the drain, -1 unknown */
};

/* stats_value returns the number after "\nKEY: " in a stats reply, or -1. */
static long stats_value(const char *yaml, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\n%s: ", key);
    const char *p = strstr(yaml, pat);
    return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* server_jobs_left asks the server's `stats`, on a new connection, how many jobs it still holds
 * (ready, reserved, delayed or buried). Returns that number, or -1 if it cannot tell. */
static long server_jobs_left(void)
{
    static char buf[RBUF];
    int fd = connect_to();
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    struct timeval tv = {5, 0}; /* a bound on every read */
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    size_t len = 0;
    long left = -1, body_len = -1;
    const char *eol = NULL;
    if (write(fd, "stats\r\n", 7) == 7) {
        while (len < sizeof buf - 1) {
            ssize_t n = read(fd, buf + len, sizeof buf - 1 - len);
            if (n <= 0)
                break;
            len += (size_t)n;
            buf[len] = 0;
            if (eol == NULL && (eol = strstr(buf, "\r\n")) != NULL &&
                sscanf(buf, "OK %ld", &body_len) != 1)
                break;
            if (eol != NULL && body_len >= 0 && len >= (size_t)(eol - buf) + 2 + (size_t)body_len)
                break;
        }
    }
    close(fd);
    if (eol != NULL && body_len >= 0 && len >= (size_t)(eol - buf) + 2 + (size_t)body_len) {
        static const char *const keys[] = {"current-jobs-ready", "current-jobs-reserved",
                                           "current-jobs-delayed", "current-jobs-buried"};
        left = 0;
        for (size_t i = 0; i < sizeof keys / sizeof *keys && left >= 0; i++) {
            long v = stats_value(eol, keys[i]);
            left = v < 0 ? -1 : left + v;
        }
    }
    return left;
}

/* run_drain queues every job with the producers alone (sampling the server's RSS before the
 * first put and once every put is acknowledged), then lets the consumers reserve and delete
 * them all. Returns 1 if every job was queued and drained. */
static int run_drain(struct drain_result *r)
{
    double t0 = now_s(), tq = t0, t2 = t0;
    r->rss[1] = r->rss[2] = -1;
    r->cpu[1] = r->cpu[2] = -1;
    r->d_secs = 0;
    r->left = -1;
    r->rss[0] = server_rss();
    r->cpu[0] = server_cpu();
    start_conns(0, o.clients, t0);
    int ok = loop_until(o.jobs, t0, &tq);
    r->queued = done;
    r->q_secs = (ok ? tq : now_s()) - t0;
    r->cpu[1] = server_cpu();
    if (!ok)
        return 0;
    r->rss[1] = server_rss();
    /* second phase: the consumers finish every job again, each once */
    memset(seen, 0, (size_t)o.jobs);
    done = 0;
    double td = now_s();
    start_conns(o.clients, nconns, td);
    ok = loop_until(o.jobs, t0, &t2);
    r->d_secs = (ok ? t2 : now_s()) - td;
    r->cpu[2] = server_cpu();
    if (ok) {
        r->left = server_jobs_left();
        if (r->left != 0)
            anomaly("the server's stats lists %ld job%s after the drain", r->left,
                    r->left == 1 ? "" : "s");
    }
    r->rss[2] = server_rss();
    return ok;
}

/* report_drain prints the drain's summary and its RESULT line, with spur-bench drain's keys. */
static void report_drain(const struct drain_result *r, int ok)
{
    double qs = r->q_secs > 0 ? r->q_secs : 1e-9, ds = r->d_secs > 0 ? r->d_secs : 1e-9;
    long drained = r->queued == o.jobs ? done : 0;
    printf("beanstalk-bench drain: queued %ld of %ld jobs of %d bytes on %d connections (window "
           "%d) in %.3f s: %.0f jobs/s; drained %ld with %d workers in %.3f s: %.0f jobs/s\n",
           r->queued, o.jobs, o.payload, o.clients, o.window, qs, (double)r->queued / qs, drained,
           o.workers, ds, (double)drained / ds);
    int has_rss = r->rss[0] >= 0 && r->rss[1] >= 0;
    double per = has_rss ? (double)(r->rss[1] - r->rss[0]) / (double)o.jobs : 0;
    if (has_rss)
        printf("  server RSS: %.1f MiB before, %.1f MiB queued, %.1f MiB drained: %.0f bytes per "
               "queued job\n", (double)r->rss[0] / 1048576.0, (double)r->rss[1] / 1048576.0,
               (double)r->rss[2] / 1048576.0, per);
    printf("RESULT scenario=drain server=%s queue_jobs_per_s=%.0f", o.label,
           (double)r->queued / qs);
    if (r->cpu[0] >= 0 && r->cpu[1] >= 0 && r->queued > 0)
        printf(" queue_cpu_us_per_job=%.2f", (r->cpu[1] - r->cpu[0]) * 1e6 / (double)r->queued);
    else
        printf(" queue_cpu_us_per_job=n/a");
    printf(" jobs=%ld jobs_per_s=%.0f", drained, (double)drained / ds);
    if (r->cpu[1] >= 0 && r->cpu[2] >= 0 && drained > 0)
        printf(" cpu_us_per_job=%.2f", (r->cpu[2] - r->cpu[1]) * 1e6 / (double)drained);
    else
        printf(" cpu_us_per_job=n/a");
    if (has_rss)
        printf(" rss_before=%lld rss_queued=%lld rss_drained=%lld rss_bytes_per_job=%.0f",
               r->rss[0], r->rss[1], r->rss[2], per);
    else
        printf(" rss_bytes_per_job=n/a");
    printf(" queue_left=%ld anomalies=%ld status=%s\n", r->left > 0 ? r->left : 0, anomalies,
           ok ? "ok" : "incomplete");
}

int main(int argc, char **argv)
{
    parse(argc, argv);
    size_t nj = (size_t)o.jobs;
    sent_at = calloc(nj, sizeof *sent_at);
    owner = calloc(nj, sizeof *owner);
    seen = calloc(nj, 1);
    lat = calloc(nj, sizeof *lat);
    nconns = o.clients + o.workers;
    conns = calloc((size_t)nconns, sizeof *conns);
    epfd = epoll_create1(0);
    if (!sent_at || !owner || !seen || !lat || !conns || epfd < 0)
        die("out of memory");
    for (int i = 0; i < nconns; i++) {
        struct bconn *c = &conns[i];
        c->fd = connect_to();
        c->worker = i >= o.clients;
        c->idx = i;
        c->reserved = -1;
        if (!c->worker && (c->fifo = calloc((size_t)o.window, sizeof *c->fifo)) == NULL)
            die("out of memory");
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
        epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev);
    }
    if (strcmp(o.scenario, "drain") == 0) {
        struct drain_result r;
        int ok = run_drain(&r);
        report_drain(&r, ok);
        return ok && anomalies == 0 ? 0 : 1;
    }
    double cpu0 = server_cpu(), t0 = 0, t1 = 0;
    int ok = run(&t0, &t1);
    double cpu1 = server_cpu();
    if (!ok)
        t1 = now_s();
    qsort(lat, (size_t)done, sizeof *lat, cmp_double);
    double secs = t1 - t0 > 0 ? t1 - t0 : 1e-9;
    printf("beanstalk-bench %s: %ld of %ld jobs in %.3f s, %.0f jobs/s; latency p50 %.1f us, "
           "p99 %.1f us\n",
           o.scenario, done, o.jobs, secs, (double)done / secs, pct(0.5), pct(0.99));
    printf("RESULT scenario=%s server=%s jobs=%ld jobs_per_s=%.0f p50_us=%.1f p99_us=%.1f "
           "p999_us=%.1f",
           o.scenario, o.label, done, (double)done / secs, pct(0.5), pct(0.99), pct(0.999));
    if (cpu0 >= 0 && cpu1 >= 0 && done > 0)
        printf(" cpu_us_per_job=%.2f", (cpu1 - cpu0) * 1e6 / (double)done);
    printf(" anomalies=%ld status=%s\n", anomalies, ok ? "ok" : "incomplete");
    return ok && anomalies == 0 ? 0 : 1;
}
