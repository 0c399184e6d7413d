/* SPDX-License-Identifier: BSD-3-Clause */
/* dump: the server's jobs and records as dump lines (dumpfmt.h), for the admin commands `dump`
 * and `load` (dump_admin_register adds them to admin.c's command table). The stopped-store
 * `spurd --dump=FILE` / `spurd --load=FILE` are dump_offline.h's (the shell: they open a store). */
#ifndef SPUR_DUMP_H
#define SPUR_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct dump_job;
struct engine;
struct job;

/* dump_dumped reports whether the listing dumps j: background jobs (queued, future, pending or
 * running: a running one is dumped as queued, to run again) and jobs with extension state. A
 * foreground job belongs to the clients waiting on it here and is left out. */
int dump_dumped(const struct job *j);

/* dump_job_append appends j's job line to b. Returns 0 or -1 (no memory). */
int dump_job_append(const struct engine *e, const struct job *j, struct buf *b);

/* dump_records_append appends every record of every kind (engine_ext record_each) to b, counting
 * them in *n. Returns 0 or -1 (no memory). */
int dump_records_append(const struct engine *e, struct buf *b, uint64_t *n);

/* dump_load_line is the admin command `load LINE`: LINE (len bytes) is one dump line. A job
 * line creates a background job with a new handle number (its meta, whose "after" the sender has
 * renumbered, goes to engine_ext.job_restored; without a taker the job is runnable at its
 * "when"), unless a job of its function with its unique is there: then nothing changes. A record
 * line goes to engine_ext.record_restored[kind]. With a store, what is loaded is written in the
 * next batch (the reply does not wait for it). Writes the reply line into out (cap bytes): "OK
 * H N\r\n" (the new job's handle number), "OK EXISTS N\r\n" (the job there), "OK\r\n" (a
 * record, a header or end line), or "ERR CODE text\r\n". */
void dump_load_line(struct engine *e, const char *line, size_t len, char *out, size_t cap);

/* dump_job_invalid returns why d cannot be a job under configuration c (what a submit refuses,
 * so that no loaded job is one a replay would set aside), or NULL. */
const char *dump_job_invalid(const struct config *c, const struct dump_job *d);

/* dump_admin_register adds the admin commands `dump`, `dump next-id` and `load LINE` to e
 * (admin_register). Returns 0 or -1. */
int dump_admin_register(struct engine *e);

#ifdef __cplusplus
}
#endif
#endif
