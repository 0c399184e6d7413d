/* SPDX-License-Identifier: BSD-3-Clause */
/* store_sqlite: the durable store of background jobs, in one SQLite file (WAL mode, fsync'd group
 * commits). Pure with respect to the event loop: it never includes <ev.h> and owns no watcher.
 *
 * Jobs are keyed by their handle number (id), so jobs never overwrite each other. Writes are
 * batched: add and done only queue an operation in the current batch; a commit writes the whole
 * batch as one transaction and returns once it is on disk.
 *
 * Thread-safety. The functions fall into two sides that touch disjoint state:
 *   - the LOOP side: store_sqlite_add, store_sqlite_done, store_sqlite_pending,
 *     store_sqlite_take_batch, store_sqlite_retry_dones (thin wrappers over a store_queue of
 *     store_batch.h) and store_batch_* (only on a batch the caller holds). They touch only the current, not yet taken batch; no disk I/O, never block.
 *   - the CONNECTION side: store_sqlite_write_batch, store_sqlite_replay, store_sqlite_maintain,
 *     store_sqlite_error and store_sqlite_handle. They touch only the SQLite connection.
 * Calls on the same side must not overlap (use each side from one thread, or serialise it). One
 * thread may run the loop side while another runs the connection side at the same time; no lock is
 * taken inside this module. store_sqlite_commit and store_sqlite_close use both sides: call them only
 * when no other thread uses the store (no committer thread running). store_sqlite_open returns
 * before any other call can happen.
 * A taken batch belongs to whoever holds it; hand it between threads only through something that
 * orders memory (a mutex, or an ev_async together with a mutex-protected queue). Batches must be
 * written in the order they were taken, so that a done never overtakes the add it deletes.
 *
 * Typical single-threaded use: add/done during a loop iteration, store_sqlite_commit once before the
 * loop sleeps, store_sqlite_maintain about once a second.
 * With a committer thread: the loop calls store_sqlite_take_batch and passes the batch on; the
 * committer calls store_sqlite_write_batch, then (about once a second) store_sqlite_maintain, and
 * passes the batch back; the loop reads the result and calls store_sqlite_free_batch. */
#ifndef SPUR_STORE_SQLITE_H
#define SPUR_STORE_SQLITE_H

#include <stddef.h>
#include <stdint.h>

#include "store_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

/* struct store_sqlite is an open store: the connection and the current batch. Opaque. */
struct store_sqlite;

/* store_sqlite_open opens, or creates, the store at path: WAL mode, synchronous=FULL, a busy
 * timeout, incremental auto-vacuum, Spur's schema (tables spur_meta, spur_jobs, spur_import) and
 * prepared statements.
 *
 * If import_table is not NULL and a table of that name with gearmand's schema (unique_key,
 * function_name, priority, data and optionally when_to_run) exists in the file and has not been
 * imported before, its rows are copied into spur_jobs in one transaction: ids are assigned from
 * max(*next_id, largest id ever used + 1) upwards in the table's rowid order, priority is kept
 * (0 high, 1 normal, 2 low; anything else becomes normal), when_to_run is kept (NULL or negative
 * becomes 0), the reducer is empty, rows with an empty function name are skipped. In the same
 * transaction the import is recorded in spur_import and the table is renamed to
 * "<import_table>_spur_imported" (kept as a copy for the operator to drop), so it happens once.
 * store_sqlite_note tells what happened.
 *
 * next_id may be NULL. If not, on return *next_id is at least the largest id ever used + 1 (and
 * past every imported id): the engine should number new jobs from there.
 * Returns the store, or NULL with a message in err (errlen bytes, always NUL-terminated). */
struct store_sqlite *store_sqlite_open(const char *path, const char *import_table, uint64_t *next_id,
                                       char *err, size_t errlen);

/* store_sqlite_check checks the store file at path before it is opened (PRAGMA quick_check). A
 * missing, empty or sound file returns 0, and so does one that is not a database at all (open
 * reports that). A damaged file is read row by row in id order, seeking past damaged pages, so that
 * one bad page costs only the rows on it. Without recover it returns -1 and report says how many
 * jobs are readable and how many may be lost. With recover, the readable jobs (and what can be read
 * of spur_meta, spur_import and spur_quarantine) are written to a fresh file, the damaged file is
 * kept as "<path>.damaged-<UTC time>" (its WAL beside it) and the fresh one takes its place; it
 * returns 1 and report says what was lost. -1 with report also when recovery fails (path is then
 * untouched). Call with no connection open on path (the server holds its lock). */
int store_sqlite_check(const char *path, int recover, char *report, size_t len);

/* store_sqlite_note returns a one-line message about what open did that the operator should know
 * (a gearmand import, or a re-appeared import table that was left alone), or NULL. Valid until
 * close. */
const char *store_sqlite_note(const struct store_sqlite *s);

/* store_sqlite_add queues the job r to be stored, in the current batch. The batch owns a copy of
 * every field; r is not kept. No disk I/O. Returns 0, or -1 when out of memory or when r is invalid
 * (id 0 or above INT64_MAX, prio outside 0..2). Loop side. */
int store_sqlite_add(struct store_sqlite *s, const struct store_rec *r);

/* store_sqlite_done queues the deletion of the job id in the current batch. If the same batch still
 * holds the add of id, both are dropped and nothing reaches the disk. No disk I/O. Returns 0, or -1
 * when out of memory. Loop side. */
int store_sqlite_done(struct store_sqlite *s, uint64_t id);

/* store_sqlite_pending returns the number of operations in the current batch (adds plus dones,
 * not counting pairs that cancelled out). Loop side. */
size_t store_sqlite_pending(const struct store_sqlite *s);

/* store_sqlite_take_batch detaches the current batch and returns it, leaving an empty current batch
 * (O(1), no allocation). Returns NULL when the current batch is empty. The caller owns the batch and
 * must free it with store_sqlite_free_batch. Loop side. */
struct store_batch *store_sqlite_take_batch(struct store_sqlite *s);

/* store_sqlite_write_batch writes b as one transaction and returns once it is durable (the WAL is
 * fsync'd). Returns 0, or -1 with everything rolled back (nothing of b is stored) and an error text
 * in store_batch_error(b) and store_sqlite_error(s), e.g. when the disk is full. The store stays
 * usable. b is not freed and may be written again (a retry), or freed. Connection side. */
int store_sqlite_write_batch(struct store_sqlite *s, struct store_batch *b);

/* store_sqlite_retry_dones copies the done ids of b (typically a batch whose write failed) into the
 * current batch, so those deletions are tried again with the next batch; deleting an id that is not
 * stored is harmless. Returns 0, or -1 when out of memory. Loop side. */
int store_sqlite_retry_dones(struct store_sqlite *s, const struct store_batch *b);

/* store_sqlite_free_batch frees b and the job copies it owns. NULL is allowed. */
void store_sqlite_free_batch(struct store_batch *b);

/* store_sqlite_commit writes the current batch as one transaction and returns once it is durable:
 * take, write, free. Returns 0 (also when the batch is empty), or -1 with the batch rolled back and
 * the text in store_sqlite_error(s): its adds are not stored (the engine must report them failed)
 * and its dones are put back into the current batch to be retried with the next commit. Uses both
 * sides: single-threaded use only. */
int store_sqlite_commit(struct store_sqlite *s);

/* store_sqlite_error returns the text of the last failed write or maintenance step, or "" (never
 * NULL). Connection side. */
const char *store_sqlite_error(const struct store_sqlite *s);

/* store_sqlite_replay calls cb(ctx, r) for every stored job in submission order (ascending id),
 * after checking each row with store_row_decode: a row that is not a job is never passed to cb but
 * moved to the table spur_quarantine once the scan ends (see store_sqlite_quarantined);
 * streaming the rows (constant memory, plus 16 bytes per invalid row). r and its pointers are valid only during the call; empty
 * fields are "" (never NULL). A non-zero return from cb stops the replay and is returned. cb may use
 * the loop side of the store but not the connection side. If max_id is not NULL, *max_id receives
 * the largest id ever stored, even if that job has since been deleted (a persistent high-water
 * mark), or 0 for a new store. Returns 0, the callback's non-zero value, or -1 on a read error
 * (text in store_sqlite_error). Connection side. */
int store_sqlite_replay(struct store_sqlite *s, int (*cb)(void *ctx, const struct store_rec *r),
                        void *ctx, uint64_t *max_id);

/* store_sqlite_set_max_function sets the longest function or reducer name a replayed row may have
 * (--max-function-name; 512 until set). Call before store_sqlite_replay. */
void store_sqlite_set_max_function(struct store_sqlite *s, size_t max);

/* store_sqlite_replay_records calls cb(ctx, r) for every stored record (kind, then key order). Returns
 * 0, cb's non-zero value, or -1 on a read error (text in store_sqlite_error). */
int store_sqlite_replay_records(struct store_sqlite *s,
                                int (*cb)(void *ctx, const struct store_record *r), void *ctx);

/* store_sqlite_quarantined returns how many rows the last store_sqlite_replay found not to be jobs
 * (see store_row_decode) and moved from spur_jobs to the table spur_quarantine, with the reason and
 * the time, in one transaction after the last row was read. If note is not NULL, *note is a
 * one-line summary for the log ("" when none), valid until the next replay or close. */
uint64_t store_sqlite_quarantined(const struct store_sqlite *s, const char **note);

/* store_sqlite_maintain keeps the files bounded; call it about once a second. It does nothing (no
 * system call, no SQL) unless something was written since the last call that had work to do. Then:
 * when more than a quarter of the file (and at least 4 MiB) is free pages, it returns up to 4 MiB
 * of them to the file system (PRAGMA incremental_vacuum); when the WAL holds 4 MiB or more, or
 * pages were just freed, it checkpoints with TRUNCATE, without waiting for other connections (a
 * busy checkpoint is retried on the next call). Errors are kept in store_sqlite_error and not
 * otherwise reported: the store stays usable. Connection side. */
void store_sqlite_maintain(struct store_sqlite *s);

/* store_sqlite_handle returns the underlying sqlite3 connection, for tests and diagnostics only
 * (e.g. PRAGMA max_page_count to simulate a full disk). Connection side. */
struct sqlite3 *store_sqlite_handle(struct store_sqlite *s);

/* store_sqlite_close writes the pending batch, if any (best effort), finalises the statements and
 * closes the file (SQLite then checkpoints and removes the WAL). NULL is allowed. Uses both sides:
 * stop the committer thread first. */
void store_sqlite_close(struct store_sqlite *s);

/* store_sqlite_backend is this module behind the store_backend interface (store_backend.h): the
 * spurd path. Its open takes an exclusive flock on the file (one server per store), checks it
 * (store_sqlite_check, rewriting it with --store-recover), opens it and applies --store-sync and
 * --store-max-pages (PRAGMA synchronous, PRAGMA max_page_count); a gearmand import (-q libsqlite3)
 * reads the table params->import_table, "gearman_queue" when NULL. The batch queue of the
 * functions above stays empty: the store manager queues batches itself. */
extern const struct store_backend store_sqlite_backend;

/* struct store_sqlite_params is the SQLite backend's own parameters (store_params.own), read from
 * its options. */
struct store_sqlite_params {
    int recover;    /* --store-recover: rewrite a damaged store from what is readable */
    long max_pages; /* --store-max-pages, 0 = no cap (tests a full disk) */
};

#ifdef __cplusplus
}
#endif
#endif
