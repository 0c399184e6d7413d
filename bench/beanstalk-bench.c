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
#include <time.h>
#include <unistd.h>

#define RBUF 65536 /* read buffer per connection */

/* struct opts holds the command line. */
struct opts {
    const char *scenario; /* bg-submit or rt */
    const char *host;     /* server address */
    int port;             /* server port */
    long jobs;            /* jobs to put */
    int clients;          /* producer connections */
    int workers;          /* consumer connections (rt) */
    int window;           /* puts in flight per producer */
    int payload;          /* body bytes, at least 16 */
    int server_pid;       /* sample the server's CPU time, or 0 */
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

/* global run state */
static struct opts o = {"rt", "127.0.0.1", 11300, 20000, 1, 1, 1, 64, 0, "beanstalkd", 600, 15};
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
    if (o.server_pid <= 0)
        return -1;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", o.server_pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (p == NULL)
        return -1;
    unsigned long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
        return -1;
    return (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
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
    if (strcmp(o.scenario, "bg-submit") == 0)
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
    puts("Usage: beanstalk-bench [--scenario=rt|bg-submit] [--port=N] [--host=IPV4] [--jobs=N]\n"
         "  [--clients=N] [--workers=N] [--window=N] [--payload-size=N] [--server-pid=PID]\n"
         "  [--label=TEXT] [--timeout=S] [--stall=S]\n"
         "A load generator for beanstalkd: pipelined put (bg-submit), or put with reserve/delete\n"
         "workers (rt). Prints a RESULT line like spur-bench's. Exit 0 ok, 1 anomalies or\n"
         "unfinished, 2 usage or setup error.");
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
    int rt = strcmp(o.scenario, "rt") == 0;
    if (!rt && strcmp(o.scenario, "bg-submit") != 0)
        die("--scenario must be rt or bg-submit");
    if (o.jobs < 1 || o.clients < 1 || o.window < 1 || (rt && o.workers < 1) || o.payload < 16 ||
        o.payload > 60000 || o.timeout <= 0 || o.stall <= 0)
        die("counts must be positive; --payload-size 16..60000");
    if (!rt)
        o.workers = 0;
}

/* run drives the loop until every job finished or a bound is hit; returns 1 if finished. */
static int run(double *t0, double *t1)
{
    struct epoll_event evs[64];
    double start = now_s(), last = start;
    *t0 = start;
    for (int i = 0; i < nconns; i++) {
        struct bconn *c = &conns[i];
        if (c->worker) {
            out_append(c, "reserve\r\n", 9);
            c->pending = 1;
        } else {
            for (int k = 0; k < o.window; k++)
                put_next(c, start);
        }
        flush_out(c);
    }
    while (done < o.jobs) {
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
    *t1 = now_s();
    return 1;
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
