/* SPDX-License-Identifier: BSD-3-Clause */
/* store_pg: the durable store of background jobs in a PostgreSQL database, through libpq
 * (--store=postgres:CONNINFO, or gearmand's -q Postgres --libpq-conninfo=CONNINFO).
 *
 * It is only a backend (store_backend.h): the store manager (store.c) batches, and calls it on its
 * committer thread, so libpq's blocking calls never stall the event loop. Each batch is one
 * implicit transaction sent in libpq's pipeline mode (an INSERT ... SELECT FROM unnest of binary
 * arrays per chunk of new jobs (store_pg_rows.h), an upsert of that shape per chunk of updated
 * ones, one delete of all the batch's finished ids and the high-water mark, then one Sync: one
 * round trip per batch), with prepared statements and binary parameters only: no SQL text is
 * ever built from job data.
 *
 * Tables, created if missing: spur_jobs and spur_meta (the same columns as the SQLite store's, in
 * PostgreSQL types, plus owner and claim), spur_quarantine, spur_import and spur_servers.
 * Several servers share one database (docs/HA.md): each has a server id (params->server_id), a
 * row in spur_servers with a slot 1..STORE_PG_MAX_SERVERS that fixes its id range (slot <<
 * STORE_PG_SLOT_BITS: handles never collide, and a claimed job keeps its id), and owns the rows
 * whose owner is its id. Its lease is the session advisory lock (STORE_PG_LEASE_CLASS, slot),
 * waited for up to STORE_PG_LOCK_WAIT_MS (the session of a server just killed ends when PostgreSQL
 * notices), "in use by another server" when another session keeps it; maintain renews
 * spur_servers.renewed_at about once a second. A standby claims a dead server's rows in one
 * transaction that holds that server's lease lock (pg_try_advisory_xact_lock) and bumps its
 * epoch: at open for --takeover, at run time through adopt for --takeover-after. A server that
 * finds its epoch bumped when it reconnects is fenced: every later write fails. Schema creation
 * and registration are serialised by the transaction lock STORE_PG_LOCK_KEY.
 *
 * Outages: when the connection is lost, write_batch fails at once with "database unavailable"
 * (the manager answers the batch's submits with QUEUE_ERROR and retries its deletions), and the
 * backend reconnects by itself, from write_batch and from maintain (about once a second when
 * idle), with a pause between attempts that doubles from STORE_PG_RETRY_FIRST to
 * STORE_PG_RETRY_MAX seconds. The ids added by a batch whose commit outcome is unknown (the
 * connection broke after the Sync was sent) are deleted by the next successful batch, so a job
 * answered with an error is never run later from the database.
 *
 * A server that hangs without closing (a stopped backend, a hung host, a silent partition): the
 * session is non-blocking and every wait for the server is bounded by params->timeout
 * (--store-timeout: a statement, or a whole batch; a statement that waits for a lock by design
 * gets STORE_PG_LOCK_WAIT_MS more). Past it the query is cancelled (PQcancel), the socket shut
 * down and the session dropped: an outage like any other, the outcome of a batch whose Sync was
 * sent unknown. A late commit of that batch cannot follow the deletion of its ids: the new session
 * gets the lease only once the old backend has ended. TCP keepalives and tcp_user_timeout (=
 * --store-timeout) are connection defaults that CONNINFO may override. */
#ifndef SPUR_STORE_PG_H
#define SPUR_STORE_PG_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define STORE_PG_LOCK_KEY 0x5370757253746f72LL /* pg_advisory_lock key: "SpurStor" */
#define STORE_PG_RETRY_FIRST 0.05             /* seconds before the second reconnect attempt */
#define STORE_PG_RETRY_MAX 2.0                /* longest pause between reconnect attempts */
#define STORE_PG_CONNECT_TIMEOUT "10"         /* libpq connect_timeout unless CONNINFO sets one */
#define STORE_PG_KEEPALIVES_IDLE "5"          /* libpq keepalives_idle (seconds), unless CONNINFO */
#define STORE_PG_KEEPALIVES_INTERVAL "2"      /* keepalives_interval (seconds), unless CONNINFO */
#define STORE_PG_KEEPALIVES_COUNT "3"         /* keepalives_count, unless CONNINFO sets one */
#define STORE_PG_LOCK_WAIT_MS 15000           /* how long a session waits for its lease lock */
#define STORE_PG_LEASE_CLASS 0x53707572       /* pg_advisory_lock(CLASS, slot) is a lease: "Spur" */
#define STORE_PG_SLOT_BITS 56                 /* server slot k owns ids [k << 56, (k + 1) << 56) */
#define STORE_PG_MAX_SERVERS 63               /* server ids one database can register: ids stay
                                                 below (63 + 1) << 56 = STORE_ID_MAX */

/* store_pg_backend is this module behind the store_backend interface. params->location is the
 * libpq connection string (empty: libpq's defaults and PG* environment variables);
 * params->sync_normal sets synchronous_commit=off for the session; params->import_table, when set
 * (-q Postgres --libpq-table), must be a valid identifier. */
struct store_backend;
extern const struct store_backend store_pg_backend;

/* struct store_pg_params is the PostgreSQL backend's own parameters (store_params.own), read from
 * its options. */
struct store_pg_params {
    const char *server_id; /* --server-id: whose rows this server owns (default HOSTNAME:PORT) */
    char *const *takeover; /* --takeover ids: dead servers whose rows open claims */
    int ntakeover;         /* how many */
    double takeover_after; /* --takeover-after: claim a server's rows once its lease has not been
                              renewed for this many seconds, 0 = never */
};

#ifdef __cplusplus
}
#endif
#endif
