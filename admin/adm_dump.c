/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_dump: spuradmin --dump and --load (see adm_dump.h). */
#define _POSIX_C_SOURCE 200809L
#include "adm_dump.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adm_net.h"
#include "buf.h"
#include "dumpfmt.h"

#define LOAD_WINDOW 256            /* submits in flight at most */
#define LOAD_WINDOW_BYTES (32u << 20) /* bytes of submits in flight at most (one always goes) */
#define RECV_CHUNK 65536

/* struct conn is the connection and the bytes received and not yet used. */
struct conn {
	int fd;
	const char *host;
	int timeout_ms;
	char *in;
	size_t start, len, cap; /* unused bytes: in[start..len) */
};

static int net_error(const struct conn *c, enum adm_net_status st, const char *doing)
{
	if (st == ADM_NET_CLOSED)
		fprintf(stderr, "spuradmin: %s closed the connection while %s\n", c->host, doing);
	else if (st == ADM_NET_TIMEOUT)
		fprintf(stderr, "spuradmin: no progress from %s within the timeout while %s\n",
			c->host, doing);
	else if (st == ADM_NET_TLS)
		fprintf(stderr, "spuradmin: TLS error with %s while %s: %s\n", c->host, doing,
			adm_net_tls_error());
	else
		fprintf(stderr, "spuradmin: network error with %s while %s\n", c->host, doing);
	return -1;
}

/* fill receives more bytes (waiting up to the timeout). Returns 0 or -1 (message printed). */
static int fill(struct conn *c, const char *doing)
{
	if (c->start > 0 && (c->start == c->len || c->start > c->cap / 2)) {
		memmove(c->in, c->in + c->start, c->len - c->start);
		c->len -= c->start;
		c->start = 0;
	}
	if (c->cap - c->len < RECV_CHUNK) {
		size_t nc = c->cap ? c->cap * 2 : 4 * RECV_CHUNK;
		char *n = realloc(c->in, nc);
		if (n == NULL) {
			fprintf(stderr, "spuradmin: out of memory\n");
			return -1;
		}
		c->in = n;
		c->cap = nc;
	}
	size_t got = 0;
	enum adm_net_status st = adm_net_recv(c->fd, c->in + c->len, c->cap - c->len,
					      adm_net_now_ms() + c->timeout_ms, &got);
	if (st != ADM_NET_OK)
		return net_error(c, st, doing);
	c->len += got;
	return 0;
}

static int send_all(struct conn *c, const void *p, size_t n, const char *doing)
{
	enum adm_net_status st = adm_net_send(c->fd, p, n, adm_net_now_ms() + c->timeout_ms);
	return st == ADM_NET_OK ? 0 : net_error(c, st, doing);
}

/* next_line returns the next complete line (its length, newline included, in *n), receiving
 * more as needed. NULL on error (message printed). */
static const char *next_line(struct conn *c, size_t *n, const char *doing)
{
	size_t scan = c->start;
	for (;;) {
		char *nl = c->len > scan ? memchr(c->in + scan, '\n', c->len - scan) : NULL;
		if (nl != NULL) {
			const char *line = c->in + c->start;
			*n = (size_t)(nl - line) + 1;
			c->start += *n;
			return line;
		}
		size_t off = c->len - c->start; /* scanned already: no newline there */
		if (fill(c, doing) != 0)
			return NULL;
		scan = c->start + off;
	}
}

static bool is_dot(const char *l, size_t n)
{
	return (n == 2 && memcmp(l, ".\n", 2) == 0) || (n == 3 && memcmp(l, ".\r\n", 3) == 0);
}

/* ------------------------------------------------------------ dump */

int adm_dump_run(int fd, const char *host, int timeout_ms, const char *path)
{
	struct conn c = {.fd = fd, .host = host, .timeout_ms = timeout_ms};
	int to_stdout = strcmp(path, "-") == 0;
	FILE *out = to_stdout ? stdout : fopen(path, "wb");
	if (out == NULL) {
		fprintf(stderr, "spuradmin: cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	int rc = send_all(&c, "dump\r\n", 6, "asking for the dump");
	uint64_t lineno = 0, jobs = 0, records = 0;
	bool ended = false;
	while (rc == 0) {
		size_t n;
		const char *l = next_line(&c, &n, "reading the dump");
		if (l == NULL) {
			rc = -1;
			break;
		}
		lineno++;
		if (lineno == 1 && n >= 4 && memcmp(l, "ERR ", 4) == 0) {
			fprintf(stderr, "spuradmin: %s refused the dump: %.*s\n", host,
				(int)(n > 300 ? 300 : n - 1), l);
			rc = -1;
			break;
		}
		if (is_dot(l, n)) {
			if (!ended) {
				fprintf(stderr, "spuradmin: the dump from %s ended without its end "
					"line\n", host);
				rc = -1;
			}
			break;
		}
		struct dump_line d;
		char why[256];
		if (ended || dump_parse(l, n, &d, why, sizeof why) != 0) {
			fprintf(stderr, "spuradmin: line %" PRIu64 " of the dump from %s: %s\n", lineno,
				host, ended ? "a line after the end line" : why);
			rc = -1;
			break;
		}
		if ((lineno == 1) != (d.type == DUMP_HEADER)) {
			fprintf(stderr, "spuradmin: line %" PRIu64 " of the dump from %s: %s\n", lineno,
				host, lineno == 1 ? "no header" : "a second header");
			rc = -1;
		}
		jobs += d.type == DUMP_JOB;
		records += d.type == DUMP_RECORD;
		if (d.type == DUMP_END) {
			ended = true;
			if (d.njobs != jobs || d.nrecords != records) {
				fprintf(stderr, "spuradmin: the dump from %s lost lines\n", host);
				rc = -1;
			}
		}
		dump_line_free(&d);
		if (rc == 0 && fwrite(l, 1, n, out) != n) {
			fprintf(stderr, "spuradmin: writing %s failed: %s\n", path, strerror(errno));
			rc = -1;
		}
	}
	if ((to_stdout ? fflush(out) : fclose(out)) != 0 && rc == 0) {
		fprintf(stderr, "spuradmin: writing %s failed: %s\n", path, strerror(errno));
		rc = -1;
	}
	if (rc != 0 && !to_stdout)
		unlink(path); /* a cut dump must not pass for a backup */
	if (rc == 0)
		fprintf(stderr, "spuradmin: dumped %" PRIu64 " jobs and %" PRIu64 " records\n", jobs,
			records);
	free(c.in);
	return rc == 0 ? 0 : 1;
}

/* ------------------------------------------------------------ load */


struct load {
	struct conn c;
	uint64_t next0;     /* the server's next handle number when the load began */
	uint64_t max_new;   /* largest handle number this load created */
	uint64_t loaded, skipped, failed, records;
	uint64_t inflight_ids[LOAD_WINDOW]; /* old ids of the submits in flight, oldest first */
	size_t inflight_bytes[LOAD_WINDOW];
	size_t head, count, bytes;
	struct dump_idmap map;
};

/* handle_number returns the number after the last ':' of a handle, or 0. */
static uint64_t handle_number(const char *h, size_t n)
{
	size_t i = n;
	while (i > 0 && h[i - 1] >= '0' && h[i - 1] <= '9')
		i--;
	if (i == n || i == 0 || h[i - 1] != ':')
		return 0;
	uint64_t v = 0;
	for (; i < n; i++)
		v = v * 10 + (uint64_t)(h[i] - '0');
	return v;
}

/* created counts a job the server took as handle number id (for the dump's id old). */
static int created(struct load *L, uint64_t old, uint64_t id)
{
	if (id >= L->next0 && id > L->max_new) {
		L->loaded++;
		L->max_new = id;
	} else {
		L->skipped++; /* its unique joined a job that was there */
	}
	return dump_idmap_add(&L->map, old, id);
}

/* read_reply reads the reply to the oldest submit in flight. Returns 0 or -1 (connection lost). */
static int read_reply(struct load *L)
{
	struct conn *c = &L->c;
	while (c->len - c->start < 12)
		if (fill(c, "reading the replies") != 0)
			return -1;
	const unsigned char *h = (const unsigned char *)c->in + c->start;
	uint32_t cmd = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
	uint32_t len = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
	if (memcmp(h, "\0RES", 4) != 0 || len > (1u << 20)) {
		fprintf(stderr, "spuradmin: %s sent something that is not a reply\n", c->host);
		return -1;
	}
	while (c->len - c->start < 12 + (size_t)len)
		if (fill(c, "reading the replies") != 0)
			return -1;
	const char *body = c->in + c->start + 12;
	uint64_t old = L->inflight_ids[L->head];
	int rc = 0;
	if (cmd == 8) { /* JOB_CREATED */
		uint64_t id = handle_number(body, len);
		if (id == 0) {
			fprintf(stderr, "spuradmin: job %" PRIu64 ": unreadable handle\n", old);
			L->failed++;
		} else if (created(L, old, id) != 0) {
			rc = -1;
		}
	} else if (cmd == 19) { /* ERROR: code NUL text */
		const char *z = memchr(body, '\0', len);
		size_t cl = z ? (size_t)(z - body) : len;
		fprintf(stderr, "spuradmin: job %" PRIu64 " not loaded: %.*s %.*s\n", old, (int)cl,
			body, z ? (int)(len - cl - 1) : 0, z ? z + 1 : "");
		L->failed++;
	} else {
		fprintf(stderr, "spuradmin: %s answered a submit with packet %u\n", c->host, cmd);
		rc = -1;
	}
	c->start += 12 + len;
	L->bytes -= L->inflight_bytes[L->head];
	L->head = (L->head + 1) % LOAD_WINDOW;
	L->count--;
	return rc;
}

static int drain(struct load *L)
{
	while (L->count > 0)
		if (read_reply(L) != 0)
			return -1;
	return 0;
}

static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* submit sends a plain job (no meta) as one SUBMIT packet, pipelined. */
static int submit(struct load *L, const struct dump_job *d)
{
	char when[24] = "";
	uint32_t cmd;
	const char *mid = NULL; /* the argument between unique and data */
	size_t midlen = 0, extra = 0;
	if (d->when > 0) {
		cmd = 36; /* SUBMIT_JOB_EPOCH */
		snprintf(when, sizeof when, "%" PRId64, d->when);
		mid = when;
		midlen = strlen(when);
	} else if (d->reducer_len > 0) {
		cmd = 38; /* SUBMIT_REDUCE_JOB_BACKGROUND: func, unique, reducer, aggregator, data */
		mid = d->reducer;
		midlen = d->reducer_len;
		extra = 1;
	} else {
		cmd = d->prio == 0 ? 32 : d->prio == 2 ? 34 : 18; /* HIGH_BG, LOW_BG, BG */
	}
	if (d->func_len + d->unique_len + midlen + d->data_len + 4 > UINT32_MAX) {
		fprintf(stderr, "spuradmin: job %" PRIu64 " is too large to submit\n", d->id);
		L->failed++;
		return 0;
	}
	size_t body = d->func_len + 1 + d->unique_len + 1 + (mid ? midlen + 1 : 0) + extra +
		      d->data_len;
	unsigned char hdr[12] = {0, 'R', 'E', 'Q'};
	put32(hdr + 4, cmd);
	put32(hdr + 8, (uint32_t)body);
	struct buf b = {0};
	if (buf_reserve(&b, 12 + body - d->data_len) != 0) {
		fprintf(stderr, "spuradmin: out of memory\n");
		return -1;
	}
	buf_append(&b, hdr, 12);
	buf_append(&b, d->func, d->func_len);
	buf_append(&b, "", 1);
	buf_append(&b, d->unique, d->unique_len);
	buf_append(&b, "", 1);
	if (mid != NULL) {
		buf_append(&b, mid, midlen);
		buf_append(&b, "", 1);
	}
	if (extra)
		buf_append(&b, "", 1); /* an empty aggregator */
	while (L->count == LOAD_WINDOW || (L->count > 0 && L->bytes + body > LOAD_WINDOW_BYTES))
		if (read_reply(L) != 0) {
			buf_free(&b);
			return -1;
		}
	int rc = send_all(&L->c, buf_head(&b), buf_len(&b), "submitting");
	buf_free(&b);
	if (rc == 0)
		rc = send_all(&L->c, d->data, d->data_len, "submitting");
	if (rc != 0)
		return -1;
	size_t at = (L->head + L->count) % LOAD_WINDOW;
	L->inflight_ids[at] = d->id;
	L->inflight_bytes[at] = body;
	L->bytes += body;
	L->count++;
	return 0;
}

/* admin_load sends `load LINE` (a record, or a job with meta) once every submit before it is
 * answered, and reads the reply: "OK" (a record), "OK H N" (a job: its new handle number N),
 * "OK EXISTS N" (its unique joined job N), or an ERR line. Returns 0 (counted) or -1. */
static int admin_load(struct load *L, const struct dump_line *d)
{
	struct buf b = {0};
	int rc = drain(L);
	if (rc != 0)
		return -1;
	if (d->type == DUMP_RECORD) {
		rc = dump_write_record(&b, &d->rec);
	} else {
		struct dump_job j = d->job;
		char *meta = NULL;
		size_t mlen = 0;
		if (dump_meta_renumber(j.meta, j.meta_len, L->map.olds, L->map.news, L->map.n, &meta,
				       &mlen) != 0) {
			fprintf(stderr, "spuradmin: job %" PRIu64 ": bad meta\n", j.id);
			L->failed++;
			return 0;
		}
		j.meta = meta;
		j.meta_len = mlen;
		rc = dump_write_job(&b, &j);
		free(meta);
	}
	if (rc != 0 || buf_append(&b, "", 0) != 0) {
		buf_free(&b);
		fprintf(stderr, "spuradmin: out of memory\n");
		return -1;
	}
	/* the dump line ends in "\n": "load " + line is one admin line */
	rc = send_all(&L->c, "load ", 5, "loading") ||
	     send_all(&L->c, buf_head(&b), buf_len(&b), "loading");
	buf_free(&b);
	if (rc != 0)
		return -1;
	size_t n;
	const char *l = next_line(&L->c, &n, "reading the replies");
	if (l == NULL)
		return -1;
	unsigned long long id = 0;
	if (n >= 3 && memcmp(l, "OK", 2) == 0) {
		if (d->type == DUMP_RECORD) {
			L->records++;
		} else if (sscanf(l, "OK EXISTS %llu", &id) == 1) {
			L->skipped++;
			if (dump_idmap_add(&L->map, d->job.id, id) != 0)
				return -1;
		} else if (sscanf(l, "OK H %llu", &id) == 1) {
			if (created(L, d->job.id, id) != 0)
				return -1;
		} else {
			fprintf(stderr, "spuradmin: unexpected reply to load: %.*s", (int)n, l);
			L->failed++;
		}
	} else {
		fprintf(stderr, "spuradmin: %s %" PRIu64 " not loaded: %.*s",
			d->type == DUMP_RECORD ? "record of kind" : "job",
			d->type == DUMP_RECORD ? (uint64_t)d->rec.kind : d->job.id,
			(int)(n > 300 ? 300 : n), l);
		if (l[n - 1] != '\n')
			fputc('\n', stderr);
		L->failed++;
	}
	return 0;
}

int adm_load_run(int fd, const char *host, int timeout_ms, const char *path)
{
	int from_stdin = strcmp(path, "-") == 0;
	FILE *f = from_stdin ? tmpfile() : fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "spuradmin: cannot read %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (from_stdin) { /* read twice: checked, then loaded */
		char blk[65536];
		size_t n;
		while ((n = fread(blk, 1, sizeof blk, stdin)) > 0)
			if (fwrite(blk, 1, n, f) != n) {
				fprintf(stderr, "spuradmin: cannot keep stdin: %s\n", strerror(errno));
				fclose(f);
				return 1;
			}
		rewind(f);
	}
	char why[512];
	if (dump_verify_file(f, why, sizeof why) != 0) {
		fprintf(stderr, "spuradmin: %s: %s; nothing loaded\n", path, why);
		fclose(f);
		return 1;
	}
	rewind(f);
	struct load *L = calloc(1, sizeof *L);
	if (L == NULL) {
		fclose(f);
		return 1;
	}
	L->c = (struct conn){.fd = fd, .host = host, .timeout_ms = timeout_ms};
	int rc = send_all(&L->c, "dump next-id\r\n", 14, "asking for the next handle number");
	if (rc == 0) {
		size_t n;
		const char *l = next_line(&L->c, &n, "asking for the next handle number");
		unsigned long long v;
		if (l == NULL) {
			rc = -1;
		} else if (sscanf(l, "OK %llu", &v) != 1) {
			fprintf(stderr, "spuradmin: %s cannot load: %.*s", host, (int)(n > 300 ? 300 : n),
				l);
			rc = -1;
		} else {
			L->next0 = v;
		}
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
		struct dump_line d;
		if (dump_parse(line, (size_t)n, &d, why, sizeof why) != 0) {
			fprintf(stderr, "spuradmin: %s changed while loading: %s\n", path, why);
			rc = -1;
			break;
		}
		if (d.type == DUMP_RECORD || (d.type == DUMP_JOB && d.job.meta_len > 0))
			rc = admin_load(L, &d);
		else if (d.type == DUMP_JOB)
			rc = submit(L, &d.job);
		dump_line_free(&d);
	}
	if (rc == 0)
		rc = drain(L);
	free(line);
	fclose(f);
	printf("loaded %" PRIu64 " jobs, skipped %" PRIu64 " (unique already there), failed %" PRIu64
	       ", %" PRIu64 " records\n", L->loaded, L->skipped, L->failed, L->records);
	fflush(stdout);
	if (rc != 0)
		fprintf(stderr, "spuradmin: the load stopped early: jobs after those counted were not "
				"loaded\n");
	int status = rc == 0 && L->failed == 0 ? 0 : 1;
	dump_idmap_free(&L->map);
	free(L->c.in);
	free(L);
	return status;
}
