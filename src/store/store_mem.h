/* SPDX-License-Identifier: BSD-3-Clause */
/* store_mem: an in-memory store backend for tests (scheme mem:NAME), with fault injection, so the
 * store manager's error paths can be driven without a disk. Not durable: a store lives in this
 * process until store_mem_reset, which makes a close and reopen look like a restart.
 *
 * Stores are named by their location (the NAME of mem:NAME) and kept in a process-wide registry;
 * one store may be open once at a time (a second open fails "in use", like the SQLite lock). Every
 * function here and every backend call takes one mutex, so a test thread may inspect a store or
 * change its faults while the committer thread writes. */
#ifndef SPUR_STORE_MEM_H
#define SPUR_STORE_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "store_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

struct store_backend;

/* store_mem_backend implements store_backend.h in memory. */
extern const struct store_backend store_mem_backend;

/* struct store_mem_faults is what to break in a store. */
struct store_mem_faults {
    int fail_open;        /* open fails ("injected open failure") while set */
    unsigned fail_writes; /* the next fail_writes write_batch calls fail ("injected write
                             failure"), nothing of the batch stored; counts down */
    int full;             /* while set, a batch holding a job to store fails ("disk full"); a batch
                             of deletions alone is written, as on a full file system */
    int fail_replay;      /* replay fails ("injected read failure") after this many jobs, and
                             the rest are not replayed; 0 = never */
    int stall;            /* while set, write_batch does not return (a hung disk or database):
                             it waits, without the mutex, until the fault is cleared */
};

/* store_mem_set_faults sets the faults of store name (created empty if new). */
void store_mem_set_faults(const char *name, const struct store_mem_faults *f);

/* store_mem_put stores r in store name directly (created if new), as if written before the
 * server started. Returns 0, or -1 when r is invalid or out of memory. */
int store_mem_put(const char *name, const struct store_rec *r);

/* store_mem_count returns the number of jobs in store name (0 if it does not exist). */
size_t store_mem_count(const char *name);

/* store_mem_records returns the number of records in store name (0 if it does not exist). */
size_t store_mem_records(const char *name);

/* store_mem_has tells whether job id is in store name. */
int store_mem_has(const char *name, uint64_t id);

/* store_mem_writes returns the number of write_batch calls on store name that succeeded, and
 * store_mem_failed the number that failed. */
uint64_t store_mem_writes(const char *name);
uint64_t store_mem_failed(const char *name);

/* store_mem_reset frees every store that is not open. */
void store_mem_reset(void);

#ifdef __cplusplus
}
#endif
#endif
