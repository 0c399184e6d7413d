/* admin: the admin text commands (workers, status, version, ...) with gearmand's replies. */
#ifndef SPUR_ADMIN_H
#define SPUR_ADMIN_H

#include <stddef.h>

#include "peer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* admin_line runs one admin line (without its line ending) from p and queues the reply. */
void admin_line(struct peer *p, const char *line, size_t len);

/* admin_line_too_long queues the reply to a line longer than --max-line-length. */
void admin_line_too_long(struct peer *p);

#ifdef __cplusplus
}
#endif
#endif
