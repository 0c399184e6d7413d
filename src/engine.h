/* engine: the server's pure state (connections as peers, functions, jobs) and the seam to the
 * I/O shell. Nothing here includes <ev.h> or touches a socket, so tests drive it directly. */
#ifndef SPUR_ENGINE_H
#define SPUR_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

#ifdef __cplusplus
extern "C" {
#endif

struct peer;
struct engine;

/* struct engine_ops is what the engine asks of the shell that owns the sockets. */
struct engine_ops {
    /* output: p has new bytes in its output queue; flush them before the loop sleeps. */
    void (*output)(struct engine *e, struct peer *p);
    /* close: tear p down once the current callback has returned. */
    void (*close)(struct engine *e, struct peer *p);
    /* shutdown: stop the server; graceful lets running jobs finish first. */
    void (*shutdown)(struct engine *e, int graceful);
    /* now: the current wall-clock time in seconds (the loop's cached time). */
    double (*now)(struct engine *e);
};

/* struct engine_stats counts what the server did, for logs and admin. */
struct engine_stats {
    uint64_t connections;   /* peers ever added */
    uint64_t packets;       /* binary packets handled */
    uint64_t lines;         /* admin lines handled */
    uint64_t protocol_errors; /* malformed input answered or closed */
};

/* struct engine is the whole pure server state. */
struct engine {
    const struct config *cfg;     /* settings (borrowed, outlives the engine) */
    struct engine_ops ops;        /* the shell's callbacks */
    void *shell;                  /* the shell's own pointer, for its callbacks */
    struct peer *peers;           /* all connected peers, oldest first (circular via prev) */
    size_t npeers;                /* peers in the list */
    struct engine_stats stats;    /* counters */
    int shutting_down;            /* a graceful shutdown is in progress */
};

/* engine_init sets up e with cfg and the shell's callbacks. Returns 0 or -1. */
int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell);

/* engine_destroy frees everything e holds. Peers must have been removed first. */
void engine_destroy(struct engine *e);

#ifdef __cplusplus
}
#endif
#endif
