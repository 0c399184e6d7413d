/* SPDX-License-Identifier: BSD-3-Clause */
/* admin: the admin text commands (workers, status, version, ...) with gearmand's replies. */
#ifndef SPUR_ADMIN_H
#define SPUR_ADMIN_H

#include <stddef.h>

#include "engine.h"
#include "peer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* admin_line runs one admin line (without its line ending) from p and queues the reply. */
void admin_line(struct peer *p, const char *line, size_t len);

#define ADMIN_SLICE 2000          /* rows of all listings written per loop iteration */
#define ADMIN_SLICE_ONE 256       /* rows of one listing written in its turn */
#define ADMIN_SLICE_BACKLOG 65536 /* unsent bytes above which a listing waits for the socket */

/* admin_continue writes the next slices of the pending listings, round-robin, at most
 * ADMIN_SLICE rows in all. */
void admin_continue(struct engine *e);

/* admin_ready reports whether a pending listing can write its next slice now (its connection's
 * unsent output is below ADMIN_SLICE_BACKLOG); the shell keeps the loop polling while it can. */
int admin_ready(const struct engine *e);

/* admin_peer_gone drops p's pending listing, and moves every 'workers' listing whose next row
 * is p on to the peer after it; called before p leaves the engine's list of peers. */
void admin_peer_gone(struct peer *p);

/* admin_line_too_long queues the reply to a line longer than --max-line-length. */
void admin_line_too_long(struct peer *p);

#ifdef __cplusplus
}
#endif
#endif
