/* SPDX-License-Identifier: BSD-3-Clause */
/* top_view: rates, percentiles, order and layout of `spuradmin top`; see top_view.h. */
#include "top_view.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Widest terminal laid out; wider ones get lines of this many columns. */
#define MAX_COLS 2000

/* Lines above the function table: four of summary, the sort line, a blank, the header. */
#define HEAD_LINES 7

/* Numeric columns of the function table: each is a space and this many characters. */
#define NUM_WIDTH 8
#define NUM_COLUMNS 8

/* Narrowest and widest name column. */
#define MIN_NAME 8
#define MAX_NAME 64

void top_snap_free(struct top_snap *s)
{
	for (size_t i = 0; i < s->nfuncs; i++)
		free(s->funcs[i].name);
	free(s->funcs);
	memset(s, 0, sizeof *s);
}

struct top_func *top_funcs_find(struct top_func *funcs, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(funcs[mid].name, name);
		if (c == 0)
			return &funcs[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct top_func *top_snap_find(const struct top_snap *s, const char *name)
{
	return top_funcs_find(s->funcs, s->nfuncs, name);
}

double top_rate(uint64_t prev, uint64_t cur, double seconds)
{
	if (!(seconds > 0.0))
		return -1.0;
	uint64_t d = cur >= prev ? cur - prev : cur;
	return (double)d / seconds;
}

void top_hist_delta(const struct top_hist *old, const struct top_hist *cur, struct top_hist *out)
{
	*out = *cur;
	if (old == NULL || old->nbounds != cur->nbounds)
		return;
	for (size_t i = 0; i <= cur->nbounds; i++)
		if (cur->counts[i] < old->counts[i])
			return; /* a reset: count from 0 */
	if (cur->count < old->count)
		return;
	for (size_t i = 0; i <= cur->nbounds; i++)
		out->counts[i] = cur->counts[i] - old->counts[i];
	out->count = cur->count - old->count;
	out->sum = cur->sum > old->sum ? cur->sum - old->sum : 0.0;
}

enum top_q top_quantile(const struct top_hist *h, double q, double *value)
{
	uint64_t total = 0;
	for (size_t i = 0; i <= h->nbounds; i++)
		total += h->counts[i];
	*value = 0.0;
	if (total == 0)
		return TOP_Q_NONE;
	double rank = q * (double)total;
	double cum = 0.0;
	for (size_t i = 0; i < h->nbounds; i++) {
		double n = (double)h->counts[i];
		if (n > 0.0 && cum + n >= rank) {
			double lower = i == 0 ? 0.0 : h->bounds[i - 1];
			double upper = h->bounds[i];
			double frac = (rank - cum) / n;
			if (frac < 0.0)
				frac = 0.0;
			*value = lower + (upper - lower) * frac;
			return TOP_Q_VALUE;
		}
		cum += n;
	}
	*value = h->nbounds > 0 ? h->bounds[h->nbounds - 1] : 0.0;
	return TOP_Q_ABOVE;
}

/* The key the comparison below sorts by; one sort at a time (spuradmin is single-threaded). */
static enum top_sort sort_key;

/* sort_value returns row r's value for the current key, larger first. */
static double sort_value(const struct top_row *r)
{
	switch (sort_key) {
	case TOP_SORT_QUEUED:
		return (double)r->queued;
	case TOP_SORT_RUNNING:
		return (double)r->running;
	case TOP_SORT_WORKERS:
		return (double)r->workers;
	case TOP_SORT_SUBMIT:
		return r->submit_rate;
	case TOP_SORT_DONE:
		return r->done_rate;
	case TOP_SORT_WAIT_P99:
		if (r->p99_kind == TOP_Q_NONE)
			return -1.0;
		return r->p99_kind == TOP_Q_ABOVE ? 1e300 : r->p99;
	default:
		return 0.0;
	}
}

/* row_order compares two rows for qsort: by the key, largest first, then by name. */
static int row_order(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	if (sort_key != TOP_SORT_NAME) {
		double vx = sort_value(x), vy = sort_value(y);
		if (vx != vy)
			return vx > vy ? -1 : 1;
	}
	return strcmp(x->name, y->name);
}

void top_view_sort(struct top_view *v, enum top_sort key)
{
	v->sort = key;
	sort_key = key;
	if (v->nrows > 1)
		qsort(v->rows, v->nrows, sizeof *v->rows, row_order);
}

const char *top_sort_name(enum top_sort key)
{
	static const char *const names[TOP_SORT_COUNT] = {
		"queued", "running", "workers", "submit/s", "done/s", "wait p99", "name",
	};
	return key < TOP_SORT_COUNT ? names[key] : "?";
}

int top_view_build(struct top_view *v, const struct top_snap *cur, const struct top_snap *prev,
		   const struct top_snap *base, enum top_sort sort)
{
	memset(v, 0, sizeof *v);
	v->cur = cur;
	v->have_rates = prev != NULL;
	double dt = prev != NULL ? (double)(cur->at_ms - prev->at_ms) / 1000.0 : 0.0;
	if (cur->nfuncs > 0) {
		v->rows = calloc(cur->nfuncs, sizeof *v->rows);
		if (v->rows == NULL)
			return -1;
	}
	v->nrows = cur->nfuncs;
	for (size_t i = 0; i < cur->nfuncs; i++) {
		const struct top_func *f = &cur->funcs[i];
		struct top_row *r = &v->rows[i];
		r->name = f->name;
		r->queued = f->queued;
		r->running = f->running;
		r->workers = f->workers;
		const struct top_func *pf = prev != NULL ? top_snap_find(prev, f->name) : NULL;
		r->submit_rate = top_rate(pf != NULL ? pf->submitted : 0, f->submitted, dt);
		r->done_rate = top_rate(pf != NULL ? pf->completed : 0, f->completed, dt);
		r->fail_rate = top_rate(pf != NULL ? pf->failed : 0, f->failed, dt);
		const struct top_func *bf = base != NULL ? top_snap_find(base, f->name) : NULL;
		struct top_hist w;
		top_hist_delta(bf != NULL ? &bf->wait : NULL, &f->wait, &w);
		r->p50_kind = top_quantile(&w, 0.5, &r->p50);
		r->p99_kind = top_quantile(&w, 0.99, &r->p99);
	}
	v->submit_rate = top_rate(prev != NULL ? prev->submitted : 0, cur->submitted, dt);
	v->done_rate = top_rate(prev != NULL ? prev->completed : 0, cur->completed, dt);
	v->fail_rate = top_rate(prev != NULL ? prev->failed : 0, cur->failed, dt);
	v->commit_rate = top_rate(prev != NULL ? prev->store_commits : 0, cur->store_commits, dt);
	struct top_hist h;
	top_hist_delta(base != NULL ? &base->store_commit : NULL, &cur->store_commit, &h);
	v->commit_p50_kind = top_quantile(&h, 0.5, &v->commit_p50);
	v->commit_p99_kind = top_quantile(&h, 0.99, &v->commit_p99);
	top_hist_delta(base != NULL ? &base->store_batch : NULL, &cur->store_batch, &h);
	v->batch_avg = h.count > 0 ? h.sum / (double)h.count : -1.0;
	top_view_sort(v, sort);
	return 0;
}

void top_view_free(struct top_view *v)
{
	free(v->rows);
	v->rows = NULL;
	v->nrows = 0;
}

/* ------------------------------------------------------------------ layout */

/* The frame being written. */
struct frame {
	char *out;     /* destination */
	size_t cap;    /* its size */
	size_t len;    /* bytes written, NUL excluded */
	size_t lines;  /* lines written */
	int rows;      /* most lines */
	int cols;      /* most columns per line */
};

/* put_byte appends one byte if it and the final NUL fit. */
static void put_byte(struct frame *f, char c)
{
	if (f->len + 1 < f->cap)
		f->out[f->len++] = c;
	f->out[f->len < f->cap ? f->len : f->cap - 1] = '\0';
}

/* utf8_len returns the length of the UTF-8 sequence starting at s (1 for a stray byte). */
static size_t utf8_len(const unsigned char *s)
{
	size_t n = s[0] < 0x80 ? 1 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 1;
	return n;
}

/* put_text appends at most width characters of text, each control character (C0, DEL, C1)
 * and stray byte as '?', then pads with spaces to width when pad is set. Returns the
 * characters written. */
static int put_text(struct frame *f, const char *text, int width, bool pad)
{
	const unsigned char *s = (const unsigned char *)text;
	int n = 0;
	while (*s != '\0' && n < width) {
		size_t len = utf8_len(s);
		bool control = s[0] < 0x20 || s[0] == 0x7f || (len == 1 && s[0] >= 0x80) ||
			       (len == 2 && s[0] == 0xc2 && s[1] < 0xa0);
		if (control) {
			put_byte(f, '?');
		} else {
			for (size_t i = 0; i < len; i++)
				put_byte(f, (char)s[i]);
		}
		s += len;
		n++;
	}
	for (; pad && n < width; n++)
		put_byte(f, ' ');
	return n;
}

/* line starts a new line; returns false when the frame is full. */
static bool line(struct frame *f)
{
	if ((int)f->lines >= f->rows)
		return false;
	if (f->lines > 0)
		put_byte(f, '\n');
	f->lines++;
	return true;
}

/* text_line writes one whole line from a format, cut to the width. */
static void text_line(struct frame *f, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (line(f))
		put_text(f, buf, f->cols, false);
}

/* fmt_seconds writes a duration as "512us", "12.3ms", "2.50s" or "120s". */
static void fmt_seconds(char *buf, size_t len, double s)
{
	if (s < 0.001)
		snprintf(buf, len, "%.0fus", s * 1e6);
	else if (s < 1.0)
		snprintf(buf, len, "%.1fms", s * 1e3);
	else if (s < 100.0)
		snprintf(buf, len, "%.2fs", s);
	else
		snprintf(buf, len, "%.0fs", s);
}

/* fmt_q writes a percentile: "-" without observations, ">1000s" above the last bound. */
static void fmt_q(char *buf, size_t len, enum top_q kind, double v)
{
	if (kind == TOP_Q_NONE) {
		snprintf(buf, len, "-");
		return;
	}
	char d[24];
	fmt_seconds(d, sizeof d, v);
	snprintf(buf, len, "%s%s", kind == TOP_Q_ABOVE ? ">" : "", d);
}

/* fmt_rate writes a rate per second, or "-" when unknown. */
static void fmt_rate(char *buf, size_t len, double r)
{
	if (r < 0.0)
		snprintf(buf, len, "-");
	else if (r < 100000.0)
		snprintf(buf, len, "%.1f", r);
	else
		snprintf(buf, len, "%.0f", r);
}

/* fmt_bytes writes a size as "512 B", "1.5 KiB", "3.2 MiB" or "1.1 GiB". */
static void fmt_bytes(char *buf, size_t len, uint64_t b)
{
	if (b < 1024)
		snprintf(buf, len, "%llu B", (unsigned long long)b);
	else if (b < 1024ull * 1024)
		snprintf(buf, len, "%.1f KiB", (double)b / 1024.0);
	else if (b < 1024ull * 1024 * 1024)
		snprintf(buf, len, "%.1f MiB", (double)b / (1024.0 * 1024.0));
	else
		snprintf(buf, len, "%.1f GiB", (double)b / (1024.0 * 1024.0 * 1024.0));
}

/* summary writes the lines above the table. */
static void summary(struct frame *f, const struct top_view *v, const struct top_frame_info *info)
{
	const struct top_snap *s = v->cur;
	unsigned long long up = s->uptime > 0.0 ? (unsigned long long)s->uptime : 0;
	text_line(f, "spuradmin top - %s - Spur %s pid %lld - up %llud %02llu:%02llu:%02llu",
		  info->server, s->version, (long long)s->pid, up / 86400, up / 3600 % 24,
		  up / 60 % 60, up % 60);
	char mem[32];
	fmt_bytes(mem, sizeof mem, s->job_memory);
	text_line(f, "connections %llu: %llu client, %llu worker, %llu admin   jobs %llu: %llu "
		  "queued, %llu running, %s",
		  (unsigned long long)s->conns_open, (unsigned long long)s->conns_client,
		  (unsigned long long)s->conns_worker, (unsigned long long)s->conns_admin,
		  (unsigned long long)s->jobs_live, (unsigned long long)s->jobs_queued,
		  (unsigned long long)s->jobs_running, mem);
	char sub[32], done[32], fail[32];
	fmt_rate(sub, sizeof sub, v->submit_rate);
	fmt_rate(done, sizeof done, v->done_rate);
	fmt_rate(fail, sizeof fail, v->fail_rate);
	text_line(f, "jobs/s: %s submitted, %s completed, %s failed", sub, done, fail);
	if (!s->store_enabled) {
		text_line(f, "store: off");
	} else {
		char rate[32], p50[32], p99[32], batch[32];
		fmt_rate(rate, sizeof rate, v->commit_rate);
		fmt_q(p50, sizeof p50, v->commit_p50_kind, v->commit_p50);
		fmt_q(p99, sizeof p99, v->commit_p99_kind, v->commit_p99);
		if (v->batch_avg < 0.0)
			snprintf(batch, sizeof batch, "-");
		else
			snprintf(batch, sizeof batch, "%.1f", v->batch_avg);
		text_line(f, "store: %s commits/s, commit latency p50 %s p99 %s, %s ops/batch, "
			  "%llu failed",
			  rate, p50, p99, batch, (unsigned long long)s->store_failures);
	}
	if (s->flow_paused > 0 || s->flow_limited > 0) /* only where flow control is in use */
		text_line(f, "flow control: %llu paused, %llu limited, %llu jobs held back, %llu keys "
			  "waiting", (unsigned long long)s->flow_paused,
			  (unsigned long long)s->flow_limited, (unsigned long long)s->flow_held,
			  (unsigned long long)s->flow_keys_waiting);
	char window[48];
	if (info->window > 0.0)
		snprintf(window, sizeof window, "last %gs", info->window);
	else
		snprintf(window, sizeof window, "since the server started");
	text_line(f, "sort: %s (s: next key, q: quit)   refresh %gs   wait percentiles: %s",
		  top_sort_name(v->sort), info->interval, window);
	text_line(f, "%s", "");
}

/* name_width returns the width of the name column for the given terminal width. */
static int name_width(const struct top_view *v, int cols)
{
	int longest = 0;
	for (size_t i = 0; i < v->nrows && longest < MAX_NAME; i++) {
		int n = 0;
		for (const unsigned char *s = (const unsigned char *)v->rows[i].name; *s != '\0';
		     s += utf8_len(s))
			n++;
		if (n > longest)
			longest = n;
	}
	int room = cols - NUM_COLUMNS * (NUM_WIDTH + 1);
	int w = longest > MAX_NAME ? MAX_NAME : longest;
	if (w > room)
		w = room;
	return w < MIN_NAME ? MIN_NAME : w;
}

/* cells writes the numeric cells of one table line, then cuts it to the width. */
static void cells(struct frame *f, int used, const char *const *cell)
{
	char buf[NUM_COLUMNS * (NUM_WIDTH + 1) * 4 + 1];
	size_t n = 0;
	for (int i = 0; i < NUM_COLUMNS; i++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, " %*s", NUM_WIDTH, cell[i]);
	if (used < f->cols)
		put_text(f, buf, f->cols - used, false);
}

/* name_cell writes a name cut to width: a name that does not fit ends in '~'. */
static int name_cell(struct frame *f, const char *name, int width, int cols)
{
	if (width > cols)
		width = cols;
	int n = 0;
	for (const unsigned char *s = (const unsigned char *)name; *s != '\0'; s += utf8_len(s))
		n++;
	if (n <= width)
		return put_text(f, name, width, true);
	put_text(f, name, width - 1, false);
	put_byte(f, '~');
	return width;
}

size_t top_view_render(const struct top_view *v, const struct top_frame_info *info, int rows,
		       int cols, char *out, size_t cap)
{
	if (cap > 0)
		out[0] = '\0';
	if (rows < 1 || cols < 1 || cap == 0)
		return 0;
	struct frame f = {out, cap, 0, 0, rows, cols > MAX_COLS ? MAX_COLS : cols};
	summary(&f, v, info);
	int w = name_width(v, f.cols);
	static const char *const head[NUM_COLUMNS] = {"QUEUED", "RUNNING", "WORKERS", "SUBMIT/s",
						      "DONE/s", "FAIL/s", "WAIT p50", "WAIT p99"};
	if (line(&f))
		cells(&f, name_cell(&f, "FUNCTION", w, f.cols), head);
	size_t room = (size_t)rows > f.lines ? (size_t)rows - f.lines : 0;
	size_t shown = v->nrows <= room ? v->nrows : room > 0 ? room - 1 : 0;
	for (size_t i = 0; i < shown; i++) {
		const struct top_row *r = &v->rows[i];
		char q[32], run[32], wk[32], sub[32], done[32], fail[32], p50[32], p99[32];
		snprintf(q, sizeof q, "%llu", (unsigned long long)r->queued);
		snprintf(run, sizeof run, "%llu", (unsigned long long)r->running);
		snprintf(wk, sizeof wk, "%llu", (unsigned long long)r->workers);
		fmt_rate(sub, sizeof sub, r->submit_rate);
		fmt_rate(done, sizeof done, r->done_rate);
		fmt_rate(fail, sizeof fail, r->fail_rate);
		fmt_q(p50, sizeof p50, r->p50_kind, r->p50);
		fmt_q(p99, sizeof p99, r->p99_kind, r->p99);
		const char *const cell[NUM_COLUMNS] = {q, run, wk, sub, done, fail, p50, p99};
		if (line(&f))
			cells(&f, name_cell(&f, r->name, w, f.cols), cell);
	}
	if (shown < v->nrows && room > 0)
		text_line(&f, "... %zu more function%s (resize the window to see them)",
			  v->nrows - shown, v->nrows - shown == 1 ? "" : "s");
	if (v->nrows == 0)
		text_line(&f, "(no functions)");
	return f.lines;
}
