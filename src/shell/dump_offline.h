/* SPDX-License-Identifier: BSD-3-Clause */
/* dump_offline: the stopped-store `spurd --dump=FILE` and `spurd --load=FILE` (main.c), which
 * open the store the configuration names through store_backend.h, work on it and exit. Apart
 * from the live admin `dump`/`load` (dump.h) so that only main links the backends through it. */
#ifndef SPUR_DUMP_OFFLINE_H
#define SPUR_DUMP_OFFLINE_H

#ifdef __cplusplus
extern "C" {
#endif

struct config;

/* dump_offline_dump writes the jobs and records of the store c describes (--store=...) to path
 * ("-" = stdout) and returns 0, or -1 with a message on stderr. The server must not be running
 * on that store. */
int dump_offline_dump(const struct config *c, const char *path);

/* dump_offline_load adds the jobs and records of the dump file path ("-" = stdin) to the store c
 * describes, with new handle numbers ("after" in a meta renumbered), in transactions of up to
 * 64 MiB of payload; a job whose function and unique are already stored, or met earlier in the
 * file, is skipped. The file is checked whole first: a cut or damaged one stores nothing. Prints
 * a summary line on stdout; returns 0, or -1 with a message on stderr (a job a submit would
 * refuse is reported and counted as failed, the others still load). */
int dump_offline_load(const struct config *c, const char *path);

#ifdef __cplusplus
}
#endif
#endif
