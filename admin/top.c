/* SPDX-License-Identifier: BSD-3-Clause */
/* top: the terminal side of `spuradmin top`; see top.h. */
#include "top.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "adm_net.h"
#include "adm_reply.h"
#include "top_json.h"
#include "top_view.h"

/* Refreshes in the percentile window: the wait percentiles cover the last WINDOW refreshes. */
#define WINDOW 10

/* Largest reply accepted, in bytes (as spuradmin's other commands). */
#define MAX_REPLY (256u * 1024u * 1024u)

/* Size of the terminal when TIOCGWINSZ cannot tell (stdout is not a terminal). */
#define DEFAULT_ROWS 24
#define DEFAULT_COLS 80

/* What the signal handlers pass to the loop, through a pipe: the signal's number. */
static int sig_pipe[2] = {-1, -1};

/* The terminal as it was before, and what top changed. */
static struct termios saved_tty;
static bool tty_raw;     /* stdin is in raw mode */
static bool screen_on;   /* the alternate screen is shown */

/* Received bytes not yet consumed. */
struct rbuf {
	char *data;  /* owned */
	size_t len;  /* bytes held */
	size_t cap;  /* bytes allocated */
};

/* The loop's state. */
struct top {
	const struct top_config *cfg;
	int fd;                         /* admin connection */
	struct rbuf in;                 /* bytes read from it */
	bool waiting;                   /* a refresh's two commands are sent, replies pending */
	int64_t reply_deadline;         /* when they must have arrived */
	int64_t next_refresh;           /* when to send the next refresh */
	struct top_snap ring[WINDOW + 1]; /* the last snapshots, oldest first once full */
	size_t nsnaps;                  /* snapshots in ring */
	enum top_sort sort;             /* table order */
	char err[512];                  /* why the view stopped, when it did on an error */
};

/* on_signal passes the signal to the loop; async-signal-safe. */
static void on_signal(int sig)
{
	int saved = errno;
	unsigned char b = (unsigned char)sig;
	if (write(sig_pipe[1], &b, 1) < 0) {
		/* the pipe is full: the loop has wake-ups pending anyway */
	}
	errno = saved;
}

/* write_all writes len bytes to fd, retrying after EINTR and short writes. Returns 0 or -1. */
static int write_all(int fd, const char *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* term_restore puts the terminal back as it was: leaves the alternate screen, shows the
 * cursor, restores the termios settings. Safe to call more than once. */
static void term_restore(void)
{
	if (screen_on) {
		static const char leave[] = "\033[?25h\033[?1049l";
		(void)write_all(STDOUT_FILENO, leave, sizeof leave - 1);
		screen_on = false;
	}
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_tty);
		tty_raw = false;
	}
}

/* term_enter switches to raw input (when stdin is a terminal) and the alternate screen. */
static int term_enter(void)
{
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved_tty) == 0) {
		struct termios raw = saved_tty;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 1;
		raw.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
			tty_raw = true;
	}
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	screen_on = true;
	return write_all(STDOUT_FILENO, enter, sizeof enter - 1);
}

/* install_signals routes SIGINT, SIGTERM, SIGHUP and SIGWINCH to the pipe and ignores
 * SIGPIPE. Returns 0 or -1. */
static int install_signals(void)
{
	if (pipe(sig_pipe) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		fcntl(sig_pipe[i], F_SETFL, fcntl(sig_pipe[i], F_GETFL) | O_NONBLOCK);
		fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGWINCH};
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (sigaction(sigs[i], &sa, NULL) < 0)
			return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* die_of restores the terminal and ends the process by sig, as if top had not caught it. */
static void die_of(int sig)
{
	term_restore();
	signal(sig, SIG_DFL);
	raise(sig);
	_exit(128 + sig);
}

/* rbuf_read reads what the socket has into b. Returns ADM_NET_OK (possibly with nothing read),
 * ADM_NET_CLOSED or ADM_NET_ERROR; err says why on failure. */
static enum adm_net_status rbuf_read(struct top *t)
{
	struct rbuf *b = &t->in;
	if (b->len == b->cap) {
		size_t cap = b->cap == 0 ? 65536 : b->cap * 2;
		if (cap > MAX_REPLY) {
			snprintf(t->err, sizeof t->err, "a reply from %s is larger than %u bytes",
				 t->cfg->server, MAX_REPLY);
			return ADM_NET_ERROR;
		}
		char *d = realloc(b->data, cap);
		if (d == NULL) {
			snprintf(t->err, sizeof t->err, "out of memory");
			return ADM_NET_ERROR;
		}
		b->data = d;
		b->cap = cap;
	}
	size_t got = 0;
	errno = 0;
	enum adm_net_status st = adm_net_recv_now(t->fd, b->data + b->len, b->cap - b->len, &got);
	b->len += got;
	if (st == ADM_NET_OK)
		return st;
	snprintf(t->err, sizeof t->err, "lost the connection to %s: %s", t->cfg->server,
		 st == ADM_NET_CLOSED ? "the server closed it"
		 : st == ADM_NET_TLS  ? adm_net_tls_error()
				      : strerror(errno));
	return st;
}

/* two_lines returns the length of the first complete line in b and stores the second's in
 * *second; 0 when either is not complete yet. */
static size_t two_lines(const struct rbuf *b, size_t *second)
{
	struct adm_reply_scan scan;
	adm_reply_scan_init(&scan, ADM_REPLY_LINE);
	size_t first = adm_reply_scan_feed(&scan, b->data, b->len);
	if (first == 0)
		return 0;
	adm_reply_scan_init(&scan, ADM_REPLY_LINE);
	*second = adm_reply_scan_feed(&scan, b->data + first, b->len - first);
	return *second == 0 ? 0 : first;
}

/* send_refresh sends `stats json` and, when status is set, `status json`. Returns 0 or -1. */
static int send_refresh(struct top *t, bool status)
{
	static const char both[] = "stats json\r\nstatus json\r\n";
	size_t len = status ? sizeof both - 1 : strlen("stats json\r\n");
	int64_t now = adm_net_now_ms();
	t->reply_deadline = now + t->cfg->timeout_ms;
	t->waiting = true;
	if (adm_net_send(t->fd, both, len, t->reply_deadline) != ADM_NET_OK) {
		snprintf(t->err, sizeof t->err, "lost the connection to %s while writing",
			 t->cfg->server);
		return -1;
	}
	return 0;
}

/* push_snapshot parses the two replies at the start of t->in into a new snapshot at the end
 * of the ring (dropping the oldest when full) and consumes them. Returns 0 or -1. */
static int push_snapshot(struct top *t, size_t first, size_t second)
{
	struct top_snap s;
	memset(&s, 0, sizeof s);
	s.at_ms = adm_net_now_ms();
	char why[400];
	if (top_json_stats(t->in.data, first, &s, why, sizeof why) != 0 ||
	    top_json_status(t->in.data + first, second, &s, why, sizeof why) != 0) {
		top_snap_free(&s);
		snprintf(t->err, sizeof t->err, "%s: %s", t->cfg->server, why);
		return -1;
	}
	memmove(t->in.data, t->in.data + first + second, t->in.len - first - second);
	t->in.len -= first + second;
	if (t->nsnaps == WINDOW + 1) {
		top_snap_free(&t->ring[0]);
		memmove(&t->ring[0], &t->ring[1], WINDOW * sizeof t->ring[0]);
		t->nsnaps--;
	}
	t->ring[t->nsnaps++] = s;
	return 0;
}

/* first_refresh reads the first snapshot before the terminal is touched: `stats json` alone,
 * so a gearmand (which answers ERR UNKNOWN_COMMAND, and to `status json` with its text
 * listing) is recognised, then `status json`. Returns 0 or -1 with t->err set. */
/* wait_reply waits for more of a pending reply until t->reply_deadline and reads it. Returns 0,
 * or -1 with t->err set (or rbuf_read's error) when the deadline passed or the read failed. */
static int wait_reply(struct top *t)
{
	struct pollfd p = {.fd = t->fd, .events = POLLIN, .revents = 0};
	int64_t left = t->reply_deadline - adm_net_now_ms();
	if (left <= 0) {
		snprintf(t->err, sizeof t->err, "no reply from %s within %s seconds", t->cfg->server,
			 t->cfg->timeout_arg);
		return -1;
	}
	/* TLS bytes already decrypted are invisible to poll(): read them without sleeping */
	if ((adm_net_pending(t->fd) || poll(&p, 1, (int)left) > 0) && rbuf_read(t) != ADM_NET_OK)
		return -1;
	return 0;
}

static int first_refresh(struct top *t)
{
	if (send_refresh(t, false) != 0)
		return -1;
	struct adm_reply_scan scan;
	adm_reply_scan_init(&scan, ADM_REPLY_LINE);
	size_t first = 0;
	while ((first = adm_reply_scan_feed(&scan, t->in.data, t->in.len)) == 0) {
		if (wait_reply(t) != 0)
			return -1;
	}
	struct top_snap probe;
	memset(&probe, 0, sizeof probe);
	char why[400];
	int rc = top_json_stats(t->in.data, first, &probe, why, sizeof why);
	top_snap_free(&probe);
	if (rc != 0) {
		snprintf(t->err, sizeof t->err,
			 "%s is not a Spur server (spuradmin top needs `stats json`): %s",
			 t->cfg->server, why);
		return -1;
	}
	/* keep the reply, ask for the second and parse both together */
	static const char status[] = "status json\r\n";
	if (adm_net_send(t->fd, status, sizeof status - 1, t->reply_deadline) != ADM_NET_OK) {
		snprintf(t->err, sizeof t->err, "lost the connection to %s while writing",
			 t->cfg->server);
		return -1;
	}
	size_t second = 0;
	while (two_lines(&t->in, &second) == 0) {
		if (wait_reply(t) != 0)
			return -1;
	}
	t->waiting = false;
	return push_snapshot(t, first, second);
}

/* term_size returns the terminal's rows and columns, or the defaults. */
static void term_size(int *rows, int *cols)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	} else {
		*rows = DEFAULT_ROWS;
		*cols = DEFAULT_COLS;
	}
}

/* draw lays out the newest snapshot for the current terminal size and writes it over the
 * screen. Returns 0 or -1 (out of memory or stdout gone). */
static int draw(struct top *t)
{
	const struct top_snap *cur = &t->ring[t->nsnaps - 1];
	const struct top_snap *prev = t->nsnaps >= 2 ? &t->ring[t->nsnaps - 2] : NULL;
	const struct top_snap *base = t->nsnaps == WINDOW + 1 ? &t->ring[0] : NULL;
	struct top_view v;
	if (top_view_build(&v, cur, prev, base, t->sort) != 0) {
		snprintf(t->err, sizeof t->err, "out of memory");
		return -1;
	}
	int rows = 0, cols = 0;
	term_size(&rows, &cols);
	struct top_frame_info info = {
		.server = t->cfg->server,
		.interval = t->cfg->interval_ms / 1000.0,
		.window = base != NULL ? (double)(cur->at_ms - base->at_ms) / 1000.0 : 0.0,
	};
	if (info.window > 0.0)
		info.window = (double)(long long)(info.window + 0.5); /* whole seconds */
	size_t cap = (size_t)rows * ((size_t)(cols > 2000 ? 2000 : cols) * 4 + 8) + 1;
	char *text = malloc(cap);
	/* each line: text, clear to end of line, CR LF; then clear below */
	char *frame = malloc(cap + (size_t)rows * 8 + 16);
	int rc = -1;
	if (text != NULL && frame != NULL) {
		top_view_render(&v, &info, rows, cols, text, cap);
		size_t n = 0;
		memcpy(frame, "\033[H", 3);
		n = 3;
		for (const char *p = text;;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl != NULL ? (size_t)(nl - p) : strlen(p);
			memcpy(frame + n, p, len);
			n += len;
			memcpy(frame + n, "\033[K", 3);
			n += 3;
			if (nl == NULL)
				break;
			memcpy(frame + n, "\r\n", 2);
			n += 2;
			p = nl + 1;
		}
		memcpy(frame + n, "\033[J", 3);
		n += 3;
		rc = write_all(STDOUT_FILENO, frame, n);
		if (rc != 0)
			snprintf(t->err, sizeof t->err, "cannot write to the terminal: %s",
				 strerror(errno));
	} else {
		snprintf(t->err, sizeof t->err, "out of memory");
	}
	free(text);
	free(frame);
	top_view_free(&v);
	return rc;
}

/* Outcome of one pass of the loop. */
enum step { STEP_GO, STEP_QUIT, STEP_FAIL };

/* on_keys reads what the user typed: q quits, s changes the order, ^L redraws. End of input
 * quits too. Sets *redraw when the screen must change. */
static enum step on_keys(struct top *t, bool *redraw)
{
	char keys[64];
	ssize_t n = read(STDIN_FILENO, keys, sizeof keys);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? STEP_GO : STEP_QUIT;
	if (n == 0)
		return STEP_QUIT; /* end of input */
	for (ssize_t i = 0; i < n; i++) {
		if (keys[i] == 'q' || keys[i] == 'Q' || keys[i] == 4 /* ^D */)
			return STEP_QUIT;
		if (keys[i] == 's') {
			t->sort = (enum top_sort)((t->sort + 1) % TOP_SORT_COUNT);
			*redraw = true;
		} else if (keys[i] == 12 /* ^L */) {
			*redraw = true;
		}
	}
	return STEP_GO;
}

/* on_signals drains the signal pipe: SIGWINCH asks for a redraw, the others end top. */
static void on_signals(bool *redraw)
{
	unsigned char sigs[32];
	ssize_t n;
	while ((n = read(sig_pipe[0], sigs, sizeof sigs)) > 0)
		for (ssize_t i = 0; i < n; i++) {
			if (sigs[i] == SIGWINCH)
				*redraw = true;
			else
				die_of(sigs[i]);
		}
}

/* step waits for the next event (a key, a signal, bytes from the server, the refresh timer)
 * and handles it. */
static enum step step(struct top *t)
{
	int64_t now = adm_net_now_ms();
	int64_t until = t->waiting ? t->reply_deadline : t->next_refresh;
	int timeout = until <= now ? 0 : until - now > 60000 ? 60000 : (int)(until - now);
	struct pollfd p[3] = {
		{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0},
		{.fd = sig_pipe[0], .events = POLLIN, .revents = 0},
		{.fd = t->fd, .events = POLLIN, .revents = 0},
	};
	bool pending = adm_net_pending(t->fd); /* TLS bytes poll() cannot see */
	int n = poll(p, 3, pending ? 0 : timeout);
	if (pending && n >= 0) {
		p[2].revents |= POLLIN;
		n++;
	}
	if (n < 0 && errno != EINTR) {
		snprintf(t->err, sizeof t->err, "poll: %s", strerror(errno));
		return STEP_FAIL;
	}
	bool redraw = false;
	if (n > 0 && p[1].revents != 0)
		on_signals(&redraw);
	if (n > 0 && p[0].revents != 0) {
		enum step s = on_keys(t, &redraw);
		if (s != STEP_GO)
			return s;
	}
	if (n > 0 && p[2].revents != 0) {
		if (rbuf_read(t) != ADM_NET_OK)
			return STEP_FAIL;
		if (!t->waiting && t->in.len > 0) {
			snprintf(t->err, sizeof t->err, "%s sent bytes nobody asked for",
				 t->cfg->server);
			return STEP_FAIL;
		}
		size_t second = 0, first = two_lines(&t->in, &second);
		if (first > 0) {
			t->waiting = false;
			if (push_snapshot(t, first, second) != 0)
				return STEP_FAIL;
			redraw = true;
		}
	}
	now = adm_net_now_ms();
	if (t->waiting && now >= t->reply_deadline) {
		snprintf(t->err, sizeof t->err, "no reply from %s within %s seconds",
			 t->cfg->server, t->cfg->timeout_arg);
		return STEP_FAIL;
	}
	if (!t->waiting && now >= t->next_refresh) {
		t->next_refresh += t->cfg->interval_ms;
		if (t->next_refresh <= now)
			t->next_refresh = now + t->cfg->interval_ms;
		if (send_refresh(t, true) != 0)
			return STEP_FAIL;
	}
	if (redraw && draw(t) != 0)
		return STEP_FAIL;
	return STEP_GO;
}

int top_run(int fd, const struct top_config *cfg)
{
	struct top *t = calloc(1, sizeof *t);
	if (t == NULL) {
		fprintf(stderr, "Error: out of memory\n");
		return 1;
	}
	t->cfg = cfg;
	t->fd = fd;
	t->sort = TOP_SORT_QUEUED;
	int rc = 1;
	/* signals are caught only once the view starts: until then they act as usual */
	if (first_refresh(t) != 0) {
		/* t->err says why */
	} else if (install_signals() != 0) {
		snprintf(t->err, sizeof t->err, "cannot set up signals: %s", strerror(errno));
	} else {
		t->next_refresh = adm_net_now_ms() + cfg->interval_ms;
		enum step s = STEP_FAIL;
		if (term_enter() == 0 && draw(t) == 0)
			while ((s = step(t)) == STEP_GO) {
			}
		rc = s == STEP_QUIT ? 0 : 1;
	}
	term_restore();
	if (rc != 0)
		fprintf(stderr, "Error: %s\n", t->err[0] != '\0' ? t->err : "spuradmin top failed");
	for (size_t i = 0; i < t->nsnaps; i++)
		top_snap_free(&t->ring[i]);
	free(t->in.data);
	free(t);
	for (int i = 0; i < 2; i++)
		if (sig_pipe[i] >= 0)
			close(sig_pipe[i]);
	return rc;
}
