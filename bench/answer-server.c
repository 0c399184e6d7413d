/* SPDX-License-Identifier: BSD-3-Clause */
/* answer-server: the "physical reference" for bench/run.sh. A minimal epoll server that speaks
 * just enough of the Gearman binary protocol to answer the bg-submit scenario: every
 * SUBMIT_JOB_BG (and the other SUBMIT_JOB* commands) gets a JOB_CREATED with a fresh handle from
 * a counter, ECHO_REQ gets ECHO_RES. It keeps no job state, stores nothing and never runs a job,
 * so its throughput is the ceiling of the machine and the load generator: what any job server
 * could reach if its job bookkeeping cost nothing. Anything else (other commands, admin text)
 * is ignored; a bad magic or an oversize body closes that connection.
 *
 * It does the same system-call work per batch as a sensible server: one read of up to 64 KiB per
 * ready connection per loop pass, replies appended to the connection's output buffer, and one
 * write per connection with output just before the loop sleeps. One thread, no locks.
 *
 * Usage: answer-server [--port=N] [--listen=ADDR] [--port-file=PATH]
 * --port=0 (the default) picks a free port; --port-file receives it once the socket listens. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define HDR 12                  /* Gearman binary header: magic, command, body length */
#define READ_CHUNK 65536        /* bytes read per ready connection per pass */
#define MAX_BODY (1u << 26)     /* a larger declared body closes the connection (64 MiB) */
#define EVENTS_MAX 256          /* epoll events taken per wait */

/* Command numbers used here (gearman PROTOCOL). */
enum {
    CMD_SUBMIT_JOB = 7, CMD_JOB_CREATED = 8, CMD_ECHO_REQ = 16, CMD_ECHO_RES = 17,
    CMD_SUBMIT_JOB_BG = 18, CMD_SUBMIT_JOB_HIGH = 21, CMD_SUBMIT_JOB_HIGH_BG = 32,
    CMD_SUBMIT_JOB_LOW = 33, CMD_SUBMIT_JOB_LOW_BG = 34,
};

/* struct buf is a growable byte buffer with a consumed prefix [0, off). */
struct buf {
    char *p;    /* storage, owned */
    size_t len; /* bytes stored */
    size_t off; /* bytes consumed (input) or written (output) */
    size_t cap; /* allocated size of p */
};

/* struct conn is one client connection. */
struct conn {
    int fd;            /* socket */
    int dirty;         /* on the flush list */
    int want_out;      /* EPOLLOUT registered (the socket buffer was full) */
    struct buf in;     /* unparsed input */
    struct buf out;    /* unsent replies */
    struct conn *next; /* next on the flush list */
    struct conn *prev_all, *next_all; /* every live connection, for the final teardown */
};

static volatile sig_atomic_t stop;  /* set by SIGINT/SIGTERM */
static int ep;                      /* the epoll descriptor */
static struct conn *flush_list;     /* connections with output, flushed before the loop sleeps */
static uint64_t handle_counter;     /* the next handle number */
static struct conn *all_conns;      /* every allocated connection (freed at exit) */

/* on_signal asks the loop to stop. */
static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

/* buf_reserve makes room for n more bytes after len and returns where they go, or NULL when
 * out of memory. Reclaims the consumed prefix first. */
static char *buf_reserve(struct buf *b, size_t n)
{
    if (b->cap - b->len < n) {
        if (b->off > 0) {
            memmove(b->p, b->p + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->cap - b->len < n) {
            size_t cap = b->cap ? b->cap : 4096;
            while (cap - b->len < n)
                cap *= 2;
            char *p = realloc(b->p, cap);
            if (p == NULL)
                return NULL;
            b->p = p;
            b->cap = cap;
        }
    }
    return b->p + b->len;
}

/* conn_free unlinks and frees a closed connection (only from flush_all, after the events of the
 * pass that closed it were handled). */
static void conn_free(struct conn *c)
{
    if (c->prev_all != NULL)
        c->prev_all->next_all = c->next_all;
    else
        all_conns = c->next_all;
    if (c->next_all != NULL)
        c->next_all->prev_all = c->prev_all;
    free(c->in.p);
    free(c->out.p);
    free(c);
}

/* conn_close stops serving c; the flush pass frees it. */
static void conn_close(struct conn *c)
{
    if (c->fd < 0)
        return;
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->fd = -1;
    if (!c->dirty) { /* put it on the flush list so it is freed once, after this pass */
        c->dirty = 1;
        c->next = flush_list;
        flush_list = c;
    }
}

/* put_be32 writes v big-endian at p. */
static void put_be32(char *p, uint32_t v)
{
    p[0] = (char)(v >> 24);
    p[1] = (char)(v >> 16);
    p[2] = (char)(v >> 8);
    p[3] = (char)v;
}

/* reply appends a response packet with the given body to c's output. Returns 0 or -1 (memory). */
static int reply(struct conn *c, uint32_t cmd, const char *body, size_t n)
{
    char *d = buf_reserve(&c->out, HDR + n);
    if (d == NULL)
        return -1;
    memcpy(d, "\0RES", 4);
    put_be32(d + 4, cmd);
    put_be32(d + 8, (uint32_t)n);
    memcpy(d + HDR, body, n);
    c->out.len += HDR + n;
    if (!c->dirty) {
        c->dirty = 1;
        c->next = flush_list;
        flush_list = c;
    }
    return 0;
}

/* job_created appends JOB_CREATED with the handle "H:answer:<counter>". */
static int job_created(struct conn *c)
{
    char h[40] = "H:answer:", digits[24];
    size_t nd = 0, n = 9;
    uint64_t v = ++handle_counter;
    do {
        digits[nd++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (nd)
        h[n++] = digits[--nd];
    return reply(c, CMD_JOB_CREATED, h, n);
}

/* conn_parse answers every complete packet in c's input. Returns 0, or -1 when c must close. */
static int conn_parse(struct conn *c)
{
    while (c->in.len - c->in.off >= HDR) {
        const unsigned char *p = (const unsigned char *)c->in.p + c->in.off;
        if (memcmp(p, "\0REQ", 4) != 0)
            return -1; /* text admin commands and garbage are not served */
        uint32_t cmd = (uint32_t)p[4] << 24 | (uint32_t)p[5] << 16 | (uint32_t)p[6] << 8 | p[7];
        uint32_t len = (uint32_t)p[8] << 24 | (uint32_t)p[9] << 16 | (uint32_t)p[10] << 8 | p[11];
        if (len > MAX_BODY)
            return -1;
        if (c->in.len - c->in.off < HDR + (size_t)len)
            break;
        int rc = 0;
        switch (cmd) {
        case CMD_SUBMIT_JOB: case CMD_SUBMIT_JOB_BG: case CMD_SUBMIT_JOB_HIGH:
        case CMD_SUBMIT_JOB_HIGH_BG: case CMD_SUBMIT_JOB_LOW: case CMD_SUBMIT_JOB_LOW_BG:
            rc = job_created(c);
            break;
        case CMD_ECHO_REQ:
            rc = reply(c, CMD_ECHO_RES, (const char *)p + HDR, len);
            break;
        default:
            break; /* ignored */
        }
        if (rc != 0)
            return -1;
        c->in.off += HDR + (size_t)len;
    }
    if (c->in.off == c->in.len)
        c->in.off = c->in.len = 0;
    return 0;
}

/* conn_read reads once (up to READ_CHUNK) and answers what arrived. */
static void conn_read(struct conn *c)
{
    char *d = buf_reserve(&c->in, READ_CHUNK);
    if (d == NULL) {
        conn_close(c);
        return;
    }
    ssize_t r = recv(c->fd, d, c->in.cap - c->in.len, 0);
    if (r > 0) {
        c->in.len += (size_t)r;
        if (conn_parse(c) != 0)
            conn_close(c);
    } else if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
        conn_close(c);
    }
}

/* conn_flush writes c's pending output; registers EPOLLOUT when the socket is full. */
static void conn_flush(struct conn *c)
{
    while (c->fd >= 0 && c->out.off < c->out.len) {
        ssize_t w = send(c->fd, c->out.p + c->out.off, c->out.len - c->out.off, MSG_NOSIGNAL);
        if (w > 0) {
            c->out.off += (size_t)w;
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            conn_close(c);
            return;
        }
    }
    if (c->fd < 0)
        return;
    int want = c->out.off < c->out.len;
    if (!want)
        c->out.off = c->out.len = 0;
    if (want != c->want_out) {
        struct epoll_event ev = {.events = EPOLLIN | (want ? EPOLLOUT : 0), .data = {.ptr = c}};
        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->want_out = want;
    }
}

/* flush_all writes every connection on the flush list and frees the closed ones. */
static void flush_all(void)
{
    while (flush_list != NULL) {
        struct conn *c = flush_list;
        flush_list = c->next;
        c->dirty = 0;
        if (c->fd < 0)
            conn_free(c);
        else
            conn_flush(c);
    }
}

/* accept_all accepts every pending connection on the listener lfd. */
static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or EMFILE and friends: try again on the next event */
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        struct conn *c = calloc(1, sizeof *c);
        if (c == NULL) {
            close(fd);
            continue;
        }
        c->fd = fd;
        c->next_all = all_conns;
        if (all_conns != NULL)
            all_conns->prev_all = c;
        all_conns = c;
        struct epoll_event ev = {.events = EPOLLIN, .data = {.ptr = c}};
        if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
            conn_close(c);
    }
}

/* main parses the options, listens, and serves until SIGINT/SIGTERM. */
int main(int argc, char **argv)
{
    const char *listen_addr = "127.0.0.1", *port_file = NULL;
    long port = 0;
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--port=", 7) == 0) {
            char *end;
            port = strtol(argv[i] + 7, &end, 10);
            if (*end != '\0' || port < 0 || port > 65535) {
                fprintf(stderr, "answer-server: bad --port\n");
                return 2;
            }
        } else if (strncmp(argv[i], "--listen=", 9) == 0) {
            listen_addr = argv[i] + 9;
        } else if (strncmp(argv[i], "--port-file=", 12) == 0) {
            port_file = argv[i] + 12;
        } else {
            fprintf(stderr, "usage: answer-server [--port=N] [--listen=IPV4] [--port-file=PATH]\n");
            return 2;
        }
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_IGN;
    sigaction(SIGPIPE, &sa, NULL);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) { /* as many connections as the hard limit allows */
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, listen_addr, &sin.sin_addr) != 1) {
        fprintf(stderr, "answer-server: --listen takes a numeric IPv4 address\n");
        return 2;
    }
    int lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(lfd, (struct sockaddr *)&sin, sizeof sin) != 0 || listen(lfd, 1024) != 0) {
        fprintf(stderr, "answer-server: cannot listen on %s:%ld: %s\n", listen_addr, port,
                strerror(errno));
        return 1;
    }
    socklen_t sl = sizeof sin;
    getsockname(lfd, (struct sockaddr *)&sin, &sl);
    if (port_file != NULL) { /* write then rename, so a reader never sees a partial number */
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (f == NULL || fprintf(f, "%u\n", ntohs(sin.sin_port)) < 0 || fclose(f) != 0 ||
            rename(tmp, port_file) != 0) {
            fprintf(stderr, "answer-server: cannot write %s\n", port_file);
            return 1;
        }
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event lev = {.events = EPOLLIN, .data = {.ptr = NULL}};
    if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev) != 0) {
        fprintf(stderr, "answer-server: epoll: %s\n", strerror(errno));
        return 1;
    }
    struct epoll_event evs[EVENTS_MAX];
    while (!stop) {
        flush_all();
        int n = epoll_wait(ep, evs, EVENTS_MAX, 1000);
        for (int i = 0; i < n; i++) {
            struct conn *c = evs[i].data.ptr;
            if (c == NULL) {
                accept_all(lfd);
                continue;
            }
            if (c->fd < 0)
                continue;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                conn_read(c);
            if (c->fd >= 0 && (evs[i].events & EPOLLOUT))
                conn_flush(c);
        }
    }
    flush_all();
    while (all_conns != NULL) {
        conn_close(all_conns);
        flush_all();
    }
    close(lfd);
    close(ep);
    return 0;
}
