/* SPDX-License-Identifier: BSD-3-Clause */
/* feature_set: the one place that assembles the features beyond Gearman (BEYOND-GEARMAN.md)
 * onto an engine: retry policies, the dead-letter list and dependencies with their durable
 * part (jobx, jobx_store), and recurring schedules (recur). The server, the unit tests' fake
 * shell and the connection fuzzer all attach them here, so they run the same assembly. Each
 * feature reaches the core only through its engine_ext hooks (engine.h). (Not features.h: that
 * is a glibc header which <stdint.h> includes, and -I of this folder would shadow it.) */
#ifndef SPUR_FEATURE_SET_H
#define SPUR_FEATURE_SET_H

#ifdef __cplusplus
extern "C" {
#endif

struct engine;

/* features_attach attaches every feature to e (after engine_init and engine_set_sink, before a
 * store replays): each installs its engine_ext hooks and reads its settings from e->cfg (the
 * policies of --retry), and adds their admin commands (admin_register) and their counter rows
 * (metrics_add). Attaching again does nothing. engine_destroy frees them (through
 * engine_ext.destroy), so there is no detach to call. Returns 0, or -1 (out of memory, or a
 * table of admin commands or counters too many). */
int features_attach(struct engine *e);

#ifdef __cplusplus
}
#endif
#endif
