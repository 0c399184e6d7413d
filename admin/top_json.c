/* SPDX-License-Identifier: BSD-3-Clause */
/* top_json: `stats json` and `status json` into a top_view snapshot; see top_json.h. */
#include "top_json.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fail writes a reason into err and returns -1. */
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* u returns the non-negative integer at key of obj, or 0. */
static uint64_t u(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return 0;
	return (uint64_t)json_integer_value(v);
}

/* total returns obj[key]["total"], for the PRIO objects of the jobs section. */
static uint64_t total(const json_t *obj, const char *key)
{
	return u(json_object_get(obj, key), "total");
}

/* hist reads a HIST object ({"bounds", "counts", "count", "sum"}) into h; a malformed one
 * reads as empty. */
static void hist(const json_t *obj, struct top_hist *h)
{
	memset(h, 0, sizeof *h);
	json_t *bounds = json_object_get(obj, "bounds");
	json_t *counts = json_object_get(obj, "counts");
	size_t nb = json_array_size(bounds);
	if (!json_is_array(bounds) || !json_is_array(counts) || nb > TOP_HIST_MAX_BOUNDS ||
	    json_array_size(counts) != nb + 1)
		return;
	for (size_t i = 0; i < nb; i++) {
		h->bounds[i] = json_number_value(json_array_get(bounds, i));
		if (i > 0 && !(h->bounds[i] > h->bounds[i - 1])) {
			memset(h, 0, sizeof *h);
			return;
		}
	}
	for (size_t i = 0; i <= nb; i++) {
		json_t *c = json_array_get(counts, i);
		h->counts[i] = json_is_integer(c) && json_integer_value(c) > 0
				       ? (uint64_t)json_integer_value(c) : 0;
	}
	h->nbounds = nb;
	h->count = u(obj, "count");
	h->sum = json_number_value(json_object_get(obj, "sum"));
}

/* func_order compares two functions by name, for qsort. */
static int func_order(const void *a, const void *b)
{
	return strcmp(((const struct top_func *)a)->name, ((const struct top_func *)b)->name);
}

/* add_func appends a function named name (copied) to s and returns it, or NULL when memory
 * runs out. *cap is the allocated length of s->funcs. */
static struct top_func *add_func(struct top_snap *s, size_t *cap, const char *name)
{
	if (s->nfuncs == *cap) {
		size_t n = *cap == 0 ? 16 : *cap * 2;
		struct top_func *f = realloc(s->funcs, n * sizeof *f);
		if (f == NULL)
			return NULL;
		s->funcs = f;
		*cap = n;
	}
	struct top_func *f = &s->funcs[s->nfuncs];
	memset(f, 0, sizeof *f);
	f->name = strdup(name);
	if (f->name == NULL)
		return NULL;
	s->nfuncs++;
	return f;
}

/* load parses text as a JSON object; returns it (owned) or NULL with a reason in err. */
static json_t *load(const char *what, const char *text, size_t len, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_loadb(text, len, 0, &je);
	if (root == NULL || !json_is_object(root)) {
		json_decref(root);
		/* quote the start of the reply: an ERR line says why */
		size_t n = len;
		while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
			n--;
		fail(err, errlen, "the reply to `%s` is not a JSON object: %.*s", what,
		     (int)(n > 120 ? 120 : n), text);
		return NULL;
	}
	return root;
}

int top_json_stats(const char *text, size_t len, struct top_snap *s, char *err, size_t errlen)
{
	json_t *root = load("stats json", text, len, err, errlen);
	if (root == NULL)
		return -1;
	json_t *byname = json_object_get(root, "functions_by_name");
	if (!json_is_object(byname) || !json_is_number(json_object_get(root, "uptime_seconds"))) {
		json_decref(root);
		return fail(err, errlen, "the reply to `stats json` lacks \"uptime_seconds\" and "
			    "\"functions_by_name\"");
	}
	const char *version = json_string_value(json_object_get(root, "version"));
	snprintf(s->version, sizeof s->version, "%s", version != NULL ? version : "?");
	s->pid = (int64_t)u(root, "pid");
	s->uptime = json_number_value(json_object_get(root, "uptime_seconds"));
	json_t *conns = json_object_get(root, "connections");
	json_t *open = json_object_get(conns, "open_by_kind");
	s->conns_open = u(conns, "open");
	s->conns_client = u(open, "client");
	s->conns_worker = u(open, "worker");
	s->conns_admin = u(open, "admin");
	json_t *jobs = json_object_get(root, "jobs");
	json_t *ev = json_object_get(jobs, "events");
	s->jobs_live = u(jobs, "live");
	s->jobs_running = u(jobs, "running");
	s->jobs_queued = total(jobs, "queued");
	s->job_memory = u(jobs, "memory_bytes");
	s->submitted = total(ev, "submitted");
	s->completed = total(ev, "completed");
	s->failed = total(ev, "failed") + total(ev, "exception") + total(ev, "timed_out") +
		    total(ev, "lost");
	json_t *store = json_object_get(root, "store");
	s->store_enabled = json_is_true(json_object_get(store, "enabled"));
	s->store_commits = u(store, "commits");
	s->store_failures = u(store, "commit_failures");
	hist(json_object_get(store, "commit_seconds"), &s->store_commit);
	hist(json_object_get(store, "batch_operations"), &s->store_batch);
	json_t *flow = json_object_get(root, "flow");
	json_t *held = json_object_get(flow, "held");
	s->flow_paused = u(flow, "functions_paused");
	s->flow_limited = u(flow, "functions_limited");
	s->flow_held = u(held, "paused") + u(held, "concurrency") + u(held, "rate") + u(held, "key");
	s->flow_keys_waiting = u(flow, "keys_waiting");
	size_t cap = s->nfuncs;
	const char *name;
	json_t *fn;
	json_object_foreach(byname, name, fn) {
		struct top_func *f = add_func(s, &cap, name);
		if (f == NULL) {
			json_decref(root);
			return fail(err, errlen, "out of memory");
		}
		json_t *fev = json_object_get(fn, "events");
		f->submitted = u(fev, "submitted");
		f->completed = u(fev, "completed");
		f->failed = u(fev, "failed") + u(fev, "exception") + u(fev, "timed_out") +
			    u(fev, "lost");
		hist(json_object_get(fn, "wait_seconds"), &f->wait);
	}
	json_decref(root);
	if (s->nfuncs > 1)
		qsort(s->funcs, s->nfuncs, sizeof *s->funcs, func_order);
	return 0;
}

int top_json_status(const char *text, size_t len, struct top_snap *s, char *err, size_t errlen)
{
	json_t *root = load("status json", text, len, err, errlen);
	if (root == NULL)
		return -1;
	json_t *list = json_object_get(root, "functions");
	if (!json_is_array(list)) {
		json_decref(root);
		return fail(err, errlen, "the reply to `status json` lacks \"functions\"");
	}
	size_t sorted = s->nfuncs, cap = s->nfuncs;
	size_t i;
	json_t *fn;
	json_array_foreach(list, i, fn) {
		const char *name = json_string_value(json_object_get(fn, "function"));
		if (name == NULL)
			continue;
		struct top_func *f = top_funcs_find(s->funcs, sorted, name);
		if (f == NULL)
			f = add_func(s, &cap, name);
		if (f == NULL) {
			json_decref(root);
			return fail(err, errlen, "out of memory");
		}
		f->queued = total(fn, "queued");
		f->running = u(fn, "running");
		f->workers = u(fn, "available_workers");
	}
	json_decref(root);
	if (s->nfuncs > sorted)
		qsort(s->funcs, s->nfuncs, sizeof *s->funcs, func_order);
	return 0;
}
