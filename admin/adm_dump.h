/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_dump: `spuradmin --dump FILE` and `spuradmin --load FILE` (docs/BEYOND-GEARMAN.md, "Dump
 * and load").
 *
 * --dump sends the admin command `dump` and writes the lines it streams to FILE ("-" = stdout)
 * until the line "."; it checks every line and the end line's counts, so a stream cut short
 * (the server gone, the connection closed) fails and leaves no FILE behind.
 *
 * --load checks the whole FILE first (a cut or damaged file loads nothing), then asks `dump
 * next-id` and submits the plain jobs over the binary protocol, pipelined: SUBMIT_JOB_BG (HIGH,
 * LOW), SUBMIT_JOB_EPOCH for a future job, SUBMIT_REDUCE_JOB_BACKGROUND for a job with a
 * reducer. The server re-issues handles and keeps the uniques; JOB_CREATED comes once the job is
 * durable on a server with a store. A reply with a handle number below next-id, or not above
 * the largest one this load was given, is a job that already existed (the unique coalesced):
 * counted as skipped. Records and jobs with extension state (meta) go as admin lines `load
 * LINE` (the dump line, its "after" ids renumbered to the new handles), so they are bounded by
 * the server's --max-line-length. */
#ifndef SPUR_ADMIN_ADM_DUMP_H
#define SPUR_ADMIN_ADM_DUMP_H

#ifdef __cplusplus
extern "C" {
#endif

/* adm_dump_run streams `dump` from the connected fd into path. host names the server in
 * messages; timeout_ms bounds each wait for more bytes. Returns the exit status (0 or 1). */
int adm_dump_run(int fd, const char *host, int timeout_ms, const char *path);

/* adm_load_run loads the dump file path ("-" = stdin) into the server on fd. Prints the
 * summary line on stdout. Returns the exit status (0, or 1 when anything failed). */
int adm_load_run(int fd, const char *host, int timeout_ms, const char *path);

#ifdef __cplusplus
}
#endif

#endif
