/* SPDX-License-Identifier: BSD-3-Clause */
/* top: the terminal side of `spuradmin top`, a live full-screen view of a Spur server.
 *
 * Owns the terminal while it runs: raw input (termios: no echo, no line buffering; signals
 * kept), the alternate screen, SIGWINCH, SIGINT, SIGTERM, SIGHUP. Each refresh pipelines
 * `stats json` and `status json` on the admin connection, parses them (top_json), computes and
 * lays out the frame (top_view) and writes it with plain ANSI escapes. The terminal is restored
 * on every way out: q, end of input, a signal (re-raised afterwards), a lost connection or a
 * reply that does not come in time (an error line on stderr then).
 */
#ifndef SPUR_ADMIN_TOP_H
#define SPUR_ADMIN_TOP_H

#ifdef __cplusplus
extern "C" {
#endif

/* How to run the view. */
struct top_config {
	const char *server;      /* "host:port", for the header and messages */
	const char *timeout_arg; /* --timeout as given, for messages */
	int timeout_ms;          /* longest wait for a reply */
	int interval_ms;         /* time between refreshes */
};

/* top_run shows the live view of the server connected on fd until the user quits. The first
 * refresh happens before the terminal is touched: a server that does not answer `stats json`
 * with Spur's JSON (gearmand) is reported on stderr and the view never starts. Returns the exit
 * status: 0 after q or end of input, 1 after an error (message on stderr). On SIGINT, SIGTERM
 * or SIGHUP it restores the terminal and dies of the same signal. fd stays the caller's. */
int top_run(int fd, const struct top_config *cfg);

#ifdef __cplusplus
}
#endif

#endif
