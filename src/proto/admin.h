/* SPDX-License-Identifier: BSD-3-Clause */
/* admin: the admin text commands (workers, status, version, ...) with gearmand's replies. */
#ifndef SPUR_ADMIN_H
#define SPUR_ADMIN_H

#include <stddef.h>

#include <stdint.h>

#include "buf.h"
#include "engine.h"
#include "peer.h"
#include "proto_admin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* admin_line runs one admin line (without its line ending) from p and queues the reply: the
 * line's command is looked up in the command table (below), the access rules asked
 * (acl_admin_check, when the command changes state or --admin-read=allowed), and its handler
 * run; an unknown command gets gearmand's reply. */
void admin_line(struct peer *p, const char *line, size_t len);

/* ------------------------------------------------------------ the command table */

/* The flags of an admin command (struct admin_cmd.flags). */
enum admin_cmd_flag {
    ADM_CHANGES = 1 << 0, /* changes the server's state (or reads every payload, as dump):
                             --admin-allow governs it (docs/SECURITY.md lists these) */
    ADM_RAW = 1 << 1,     /* the handler takes the raw line (its payload has spaces): never
                             refused for too many words */
    ADM_EXACT = 1 << 2,   /* matches only a line of exactly the row's words */
    ADM_LINE = 1 << 3,    /* "NAME REST" with anything in REST, spaces included, is this
                             command, found before the line is split (load); the handler takes
                             the raw line. The name alone is an unknown command. */
};

#define ADMIN_CMD_WORDS 3     /* the most words a command's name has ("show failed jobs") */
#define ADMIN_CMD_WORD_MAX 31 /* the longest word of a command's name */

/* struct admin_cmd is one row of the admin command table: a line whose first words are the
 * row's name runs its handler. Where several rows match a line, the one with the most words
 * wins, and an ADM_EXACT row over another of its name. admin.c has the core rows; each
 * feature adds its own with admin_register. */
struct admin_cmd {
    const char *name; /* the first word(s) of the line, lower case, one space between (matched
                         ignoring ASCII case); NULL ends a table */
    unsigned flags;   /* ADM_* */
    void (*run)(struct peer *p, const struct pa_token *t, size_t n); /* the handler of a split
                         line (t[0..n) its words; not with ADM_RAW or ADM_LINE) */
    void (*run_raw)(struct peer *p, const char *line, size_t len);   /* the handler of the raw
                         line (with ADM_RAW or ADM_LINE only) */
};

/* admin_register adds the command table rows (ended by a row whose name is NULL; borrowed, it
 * must outlive e) to e's admin commands. A feature calls it where it is attached. Returns 0, or
 * -1 when ENGINE_ADMIN_TABLES tables are registered already, a row is malformed (name not
 * lower-case words of at most ADMIN_CMD_WORD_MAX bytes, one space apart, at most
 * ADMIN_CMD_WORDS; not exactly the handler its flags call for) or repeats a command e has (same
 * name, same ADM_EXACT). */
int admin_register(struct engine *e, const struct admin_cmd *rows);

/* admin_find returns the row that runs the split line t[0..n) (n as pa_split counts, at most
 * ADMIN_CMD_WORDS of t looked at), or NULL for an unknown command. O(rows). */
const struct admin_cmd *admin_find(const struct engine *e, const struct pa_token *t, size_t n);

/* admin_cmd_at returns e's i-th admin command (admin.c's own rows first, then the registered
 * tables in order), or NULL past the last: every listing of the commands comes from here. */
const struct admin_cmd *admin_cmd_at(const struct engine *e, size_t i);

/* admin_name_arg returns the function name token t names, decoded from the escaped form the
 * listings print (esc_decode_dup), malloc'd, with its length in *len; or NULL after replying to
 * a name longer than --max-function-name (with too_long, a whole reply line), one
 * func_name_ok refuses (a NUL byte) or no memory. */
char *admin_name_arg(struct peer *p, const struct pa_token *t, size_t *len,
                     const char *too_long);

/* The reply admin_name_arg gives a name that is too long, for the core commands (create, drop,
 * maxqueue); the submit paths say ADMIN_BAD_NAME instead. */
#define ADMIN_NAME_TOO_LONG "ERR ARGUMENT_TOO_LARGE Function+name+too+long\r\n"
/* The reply to a function name func_name_ok refuses (a NUL byte, %00 in the escaped form). */
#define ADMIN_BAD_NAME_CODE "INVALID_FUNCTION_NAME NUL+byte+in+function+name"
#define ADMIN_BAD_NAME "ERR " ADMIN_BAD_NAME_CODE "\r\n"

/* ------------------------------------------------------------ listings */

/* struct admin_job_listing is a feature's listing of jobs (dump.c's `dump`): admin.c walks the
 * jobs in handle-number order a slice per loop iteration, as it does for `show jobs`, and asks
 * these for the lines. A slice also stops once the connection holds ADMIN_SLICE_BACKLOG
 * unsent bytes (the lines may carry payloads). The listing ends with a line ".". */
struct admin_job_listing {
    int (*head)(struct engine *e, struct buf *b, uint64_t *records); /* appends the lines before
                         the first job to b, counting those it wants counted in *records;
                         returns 0 or -1 (no memory: the connection is closed) */
    int (*wanted)(const struct job *j); /* whether j has a line */
    int (*row)(const struct engine *e, const struct job *j, struct buf *b); /* appends j's line
                         to b; returns 0 or -1 (no memory: the connection is closed) */
    int (*tail)(struct buf *b, uint64_t rows, uint64_t records); /* appends the lines before
                         the "." (rows: the jobs listed); returns 0 or -1 (no memory) */
};

/* admin_list_jobs starts the listing l (borrowed, static) on p, or replies ERR BUSY while p has
 * another listing in progress. */
void admin_list_jobs(struct peer *p, const struct admin_job_listing *l);

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
