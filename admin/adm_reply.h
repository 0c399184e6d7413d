/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_reply: where an admin reply ends, and how gearadmin prints it.
 *
 * Pure: no I/O, no allocation. The caller reads bytes into one buffer and feeds the scanner
 * until it reports a complete reply, then asks adm_reply_format how to print it.
 */
#ifndef SPUR_ADMIN_ADM_REPLY_H
#define SPUR_ADMIN_ADM_REPLY_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shape of reply a command expects. */
enum adm_reply_kind {
	ADM_REPLY_LINE, /* one line: "OK ...", "ERR ..." or a bare value */
	ADM_REPLY_LIST, /* lines ending with a line that is exactly "." (or one "OK"/"ERR" line) */
	ADM_REPLY_END   /* STAT lines ending with a line that is exactly "END" (or one "ERR" line) */
};

/* Incremental scanner for one reply at the start of a buffer. */
struct adm_reply_scan {
	enum adm_reply_kind kind; /* what the command expects */
	size_t scanned;           /* bytes of the buffer already examined */
	size_t line_start;        /* offset of the line being scanned */
};

/* adm_reply_scan_init prepares s for a reply of the given kind. */
void adm_reply_scan_init(struct adm_reply_scan *s, enum adm_reply_kind kind);

/* adm_reply_scan_feed examines buf[0..len), where len only grows between calls and the first
 * bytes never change. Returns the length of the complete reply (through its final '\n'), or 0
 * when more bytes are needed. A LIST reply whose first line starts with "OK" or "ERR" and has
 * no tab is taken to be a one-line status reply (e.g. ERR UNKNOWN_COMMAND); list lines from
 * status, prioritystatus and show jobs always contain tabs, workers lines start with a digit. */
size_t adm_reply_scan_feed(struct adm_reply_scan *s, const char *buf, size_t len);

/* How to print one reply. */
struct adm_reply_out {
	bool to_stderr;      /* print on stderr instead of stdout */
	const char *prefix;  /* static text printed first ("" or "Error: ") */
	const char *body;    /* then these bytes: borrowed from the reply or static */
	size_t body_len;     /* length of body */
};

/* adm_reply_format decides how gearadmin prints the complete reply reply[0..len):
 * "OK\r..." prints "OK\n"; "OK " + rest prints rest; "ERR " + rest prints "Error: " + rest on
 * stderr; anything else is printed unchanged. The rest keeps its own line ending, so an ERR
 * line's "\r\n" reaches the terminal as is. */
void adm_reply_format(const char *reply, size_t len, struct adm_reply_out *out);

#ifdef __cplusplus
}
#endif

#endif
