/* SPDX-License-Identifier: BSD-3-Clause */
/* cmd: the handlers for binary request packets (client, worker and common commands). */
#ifndef SPUR_CMD_H
#define SPUR_CMD_H

#include "peer.h"
#include "proto_bin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* cmd_dispatch runs the handler for a well-formed request packet from p. */
void cmd_dispatch(struct peer *p, const struct pb_packet *pkt);

struct engine;
struct engine_sink;
struct worker;

/* cmd_sink is the engine sink of the real server: what the core says, encoded as packets to the
 * peers (install it with engine_set_sink after engine_init). */
extern const struct engine_sink cmd_sink;

/* cmd_grab_release answers w's held GRAB with NO_JOB (the worker sent something else first). */
void cmd_grab_release(struct engine *e, struct worker *w);

/* cmd_peer_gone releases the engine state of a peer that is going away. */
void cmd_peer_gone(struct peer *p);

/* cmd_store_sink is how the store answers held submits (store.h): a held reply counts in the
 * peer's pending_acks; a due one sends JOB_CREATED or a QUEUE_ERROR (an admin 'submit': OK
 * HANDLE or ERR QUEUE_ERROR) and resumes the peer once none is left; the end of the replay
 * resumes the peers whose submits waited for it (PEER_WAIT_REPLAY). The owners are made by
 * peer_ack_owner. */
extern const struct store_sink cmd_store_sink;

#ifdef __cplusplus
}
#endif
#endif
