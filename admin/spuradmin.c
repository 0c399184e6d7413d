/* SPDX-License-Identifier: BSD-3-Clause */
/* spuradmin: a gearadmin-compatible admin client for Spur and gearmand.
 *
 * It parses the command line (adm_opts), connects once (adm_net), then sends one admin text
 * line per requested command, always in gearadmin's fixed order and each ending in "\r\n",
 * waits for the complete reply (adm_reply) and prints it exactly as gearadmin does.
 * Exit status: 0 when every command got a reply (an ERR reply included, as with gearadmin),
 * 1 on a usage error or when the server cannot be reached, times out or hangs up, and 1 when
 * --command or a shutdown is answered ERR (scripts must learn that it did not happen).
 * A host that starts with '/' is the path of a unix-domain socket (spurd --unix=PATH).
 * `spuradmin top` (or --top) hands the connection to top.c, the live view, instead.
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adm_dump.h"
#include "adm_net.h"
#include "adm_opts.h"
#include "adm_reply.h"
#include "top.h"

/* Default server and timeout. */
#define DEFAULT_HOST "localhost"
#define DEFAULT_PORT "4730"
#define DEFAULT_TIMEOUT "10"

/* Largest --timeout accepted, in seconds (one day). */
#define MAX_TIMEOUT_S 86400.0

/* Default, smallest and largest --interval of --top, in seconds. */
#define DEFAULT_INTERVAL "1"
#define MIN_INTERVAL_S 0.1
#define MAX_INTERVAL_S 3600.0

/* Largest reply accepted, in bytes; a bigger one is reported as an error. */
#define MAX_REPLY (256u * 1024u * 1024u)

/* First size of the receive buffer. */
#define INITIAL_BUFFER 16384u

/* One admin command: the option that requests it and the line it sends. */
struct adm_command {
	enum adm_opt opt;          /* the option that asks for it */
	const char *line;          /* text before the argument (if any) and "\r\n" */
	enum adm_reply_kind kind;  /* shape of the reply */
	const char *json_key;      /* with --json, print a one-line reply as {"key": value} */
};

/* Every command, in the order gearadmin sends them (not the order of the arguments). */
static const struct adm_command commands[] = {
	{OPT_GETPID, "getpid", ADM_REPLY_LINE, NULL},
	{OPT_CREATE_FUNCTION, "create function ", ADM_REPLY_LINE, NULL},
	{OPT_DROP_FUNCTION, "drop function ", ADM_REPLY_LINE, NULL},
	{OPT_SHOW_JOBS, "show jobs", ADM_REPLY_LIST, NULL},
	{OPT_SHOW_UNIQUE_JOBS, "show unique jobs", ADM_REPLY_LIST, NULL},
	{OPT_CANCEL_JOB, "cancel job ", ADM_REPLY_LINE, NULL},
	{OPT_SERVER_VERBOSE, "verbose", ADM_REPLY_LINE, NULL},
	{OPT_SERVER_VERSION, "version", ADM_REPLY_LINE, NULL},
	{OPT_WORKERS, "workers", ADM_REPLY_LIST, NULL},
	{OPT_PRIORITY_STATUS, "prioritystatus", ADM_REPLY_LIST, NULL},
	{OPT_STATUS, "status", ADM_REPLY_LIST, NULL},
	{OPT_SHUTDOWN, "shutdown", ADM_REPLY_LINE, NULL},
	{OPT_SHUTDOWN_GRACEFUL, "shutdown graceful", ADM_REPLY_LINE, NULL},
	{OPT_STATS, "stats", ADM_REPLY_END, NULL},
	/* any line: an OK/ERR line, or a listing ending with "." (schedule list, show failed jobs) */
	{OPT_COMMAND, "", ADM_REPLY_LIST, NULL},
};

/* With --json, the read commands that have a JSON form send it instead: one line of JSON
 * (--priority-status and --show-unique-jobs get the documents that hold their data: every
 * priority's queue in 'status json', every job's unique in 'show jobs json'); the one-line
 * replies are printed as an object with one key. */
static const struct adm_command json_commands[] = {
	{OPT_SHOW_JOBS, "show jobs json", ADM_REPLY_LINE, NULL},
	{OPT_SHOW_UNIQUE_JOBS, "show jobs json", ADM_REPLY_LINE, NULL},
	{OPT_WORKERS, "workers json", ADM_REPLY_LINE, NULL},
	{OPT_PRIORITY_STATUS, "status json", ADM_REPLY_LINE, NULL},
	{OPT_STATUS, "status json", ADM_REPLY_LINE, NULL},
	{OPT_STATS, "stats json", ADM_REPLY_LINE, NULL},
	{OPT_GETPID, "getpid", ADM_REPLY_LINE, "pid"},
	{OPT_SERVER_VERBOSE, "verbose", ADM_REPLY_LINE, "verbose"},
	{OPT_SERVER_VERSION, "version", ADM_REPLY_LINE, "version"},
};

#define N_COMMANDS (sizeof commands / sizeof commands[0])

/* Bytes received from the server and not yet printed. */
struct rbuf {
	char *data;  /* owned buffer */
	size_t len;  /* bytes held */
	size_t cap;  /* bytes allocated */
};

/* One connection to the server and what error messages need to know about it. */
struct session {
	int fd;                  /* connected socket */
	const char *host;        /* host as given on the command line */
	char where[300];         /* "host:port", or the unix socket's path, for messages */
	bool tls;                /* --ssl */
	bool client_cert;        /* a client certificate is configured (option or environment) */
	bool replied;            /* the server has sent at least one byte */
	const char *timeout_arg; /* --timeout as given, for messages */
	int timeout_ms;          /* connect and per-reply timeout */
	struct rbuf in;          /* received bytes */
};

/* Name the program was run as (argv[0]), used in usage errors as gearadmin does. */
static const char *program_name = "spuradmin";

/* usage_error prints a gearadmin-style usage error and the help on stdout; returns 1. */
static int usage_error(const char *msg)
{
	printf("%s : %s\n\n", program_name, msg);
	adm_opts_help(stdout);
	return 1;
}

/* parse_timeout converts the --timeout argument to milliseconds; returns -1 if it is not a
 * number of seconds greater than 0 and at most MAX_TIMEOUT_S. */
static int parse_timeout(const char *arg)
{
	char *end = NULL;
	errno = 0;
	double s = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(s > 0.0) || s > MAX_TIMEOUT_S)
		return -1;
	double ms = s * 1000.0;
	int whole = (int)ms;
	return whole < ms ? whole + 1 : whole; /* round up: 0.0001 s still waits 1 ms */
}

/* parse_interval converts the --interval argument to milliseconds; returns -1 if it is not a
 * number of seconds from MIN_INTERVAL_S to MAX_INTERVAL_S. */
static int parse_interval(const char *arg)
{
	char *end = NULL;
	errno = 0;
	double s = strtod(arg, &end);
	if (errno != 0 || end == arg || *end != '\0' || !(s >= MIN_INTERVAL_S) || s > MAX_INTERVAL_S)
		return -1;
	return (int)(s * 1000.0 + 0.5);
}

/* any_command says whether the options ask for at least one server command. */
static bool any_command(const struct adm_options *opts)
{
	for (size_t i = 0; i < N_COMMANDS; i++)
		if (opts->given[commands[i].opt])
			return true;
	return false;
}

/* check_arguments rejects option values that would break the line protocol (a CR or LF would
 * smuggle in a second command). Returns 0, or the usage_error exit code. */
static int check_arguments(const struct adm_options *opts)
{
	for (size_t i = 0; i < N_COMMANDS; i++) {
		const char *v = opts->value[commands[i].opt];
		if (!opts->given[commands[i].opt] || v == NULL || strpbrk(v, "\r\n") == NULL)
			continue;
		char msg[128];
		snprintf(msg, sizeof msg, "the argument for option '--%s' must not contain a line break",
			 adm_opts_long_name(commands[i].opt));
		return usage_error(msg);
	}
	return 0;
}

/* validate applies the checks gearadmin does not need: TLS files without --ssl, the timeout, the
 * shutdown pair and line breaks. Stores the timeout in *timeout_ms. Returns 0 or an exit code. */
static int validate(const struct adm_options *opts, int *timeout_ms)
{
	if ((opts->given[OPT_SSL_CA_FILE] || opts->given[OPT_SSL_CERTIFICATE] ||
	     opts->given[OPT_SSL_KEY]) && !opts->given[OPT_SSL])
		return usage_error("options '--ssl-ca-file', '--ssl-certificate' and '--ssl-key' "
				   "need '--ssl'");
	const char *t = adm_opts_value(opts, OPT_TIMEOUT, DEFAULT_TIMEOUT);
	*timeout_ms = parse_timeout(t);
	if (*timeout_ms < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "the argument ('%.100s') for option '--timeout' is invalid", t);
		return usage_error(msg);
	}
	if (opts->given[OPT_INTERVAL] && !opts->given[OPT_TOP])
		return usage_error("option '--interval' needs '--top'");
	if (opts->given[OPT_TOP] && (any_command(opts) || opts->given[OPT_JSON]))
		return usage_error("option '--top' cannot be used with other commands or '--json'");
	if (opts->given[OPT_TOP] &&
	    parse_interval(adm_opts_value(opts, OPT_INTERVAL, DEFAULT_INTERVAL)) < 0) {
		char msg[256];
		snprintf(msg, sizeof msg, "the argument ('%.100s') for option '--interval' is invalid",
			 adm_opts_value(opts, OPT_INTERVAL, DEFAULT_INTERVAL));
		return usage_error(msg);
	}
	if ((opts->given[OPT_DUMP] || opts->given[OPT_LOAD]) &&
	    (any_command(opts) || opts->given[OPT_JSON] || opts->given[OPT_TOP] ||
	     (opts->given[OPT_DUMP] && opts->given[OPT_LOAD])))
		return usage_error("options '--dump' and '--load' cannot be used with other commands");
	if (opts->given[OPT_SHUTDOWN] && opts->given[OPT_SHUTDOWN_GRACEFUL])
		return usage_error("options '--shutdown' and '--shutdown-graceful' cannot be used "
				   "together");
	return check_arguments(opts);
}

/* hint returns advice for a failure, " (...)" or "": st is the failure, why the TLS reason. */
static const char *hint(const struct session *s, enum adm_net_status st, const char *why)
{
	int e = adm_net_errno();
	if (st == ADM_NET_CONNECT && (e == ECONNREFUSED || e == ENOENT))
		return s->host[0] == '/' ? " (is spurd running with --unix at this path?)"
					 : " (is the server running and listening there? see -h and -p)";
	if (st == ADM_NET_CONNECT && e == EACCES)
		return " (the socket file's permissions do not let this user in)";
	if (st == ADM_NET_TLS && !s->client_cert && why != NULL &&
	    (strstr(why, "certificate required") != NULL ||
	     strstr(why, "handshake failure") != NULL))
		return " (the server requires a client certificate: --ssl-certificate and --ssl-key)";
	if (st == ADM_NET_TLS && why != NULL && (strstr(why, "wrong version number") != NULL ||
						 strstr(why, "packet length too long") != NULL ||
						 strstr(why, "record layer failure") != NULL ||
						 (strstr(why, "TLS handshake failed") != NULL &&
						  strstr(why, "unexpected eof") != NULL)))
		return " (is this a plain, not a TLS, port? drop --ssl)";
	if (st == ADM_NET_ERROR && !s->tls && (e == ECONNRESET || e == EPIPE))
		return " (is this a TLS port? use --ssl)";
	if (st == ADM_NET_ERROR && !s->client_cert && (e == ECONNRESET || e == EPIPE))
		return " (does the server require a client certificate? --ssl-certificate and "
		       "--ssl-key)";
	return "";
}

/* open_session connects to the server named by opts. Returns 0, or 1 after printing the error
 * in gearadmin's words plus host:port, the system's reason and a hint (hint). */
static int open_session(struct session *s, const struct adm_options *opts)
{
	const char *port = adm_opts_value(opts, OPT_PORT, DEFAULT_PORT);
	if (s->host[0] == '/')
		snprintf(s->where, sizeof s->where, "%s", s->host);
	else
		snprintf(s->where, sizeof s->where, "%s%s%s:%s", strchr(s->host, ':') ? "[" : "",
			 s->host, strchr(s->host, ':') ? "]" : "", port);
	s->tls = opts->given[OPT_SSL];
	const char *pem = getenv("GEARMAN_CLIENT_PEM");
	s->client_cert = opts->given[OPT_SSL_CERTIFICATE] || (pem != NULL && pem[0] != '\0');
	int gai_error = 0;
	enum adm_net_status st = adm_net_connect(s->host, port, s->timeout_ms, &s->fd, &gai_error);
	if (st == ADM_NET_OK && opts->given[OPT_SSL]) {
		struct adm_net_tls cfg = {
			.ca_file = adm_opts_value(opts, OPT_SSL_CA_FILE, NULL),
			.cert_file = adm_opts_value(opts, OPT_SSL_CERTIFICATE, NULL),
			.key_file = adm_opts_value(opts, OPT_SSL_KEY, NULL),
		};
		char why[512];
		st = adm_net_tls_start(s->fd, s->host, &cfg, adm_net_now_ms() + s->timeout_ms, why,
				       sizeof why);
		if (st != ADM_NET_OK) {
			adm_net_close(s->fd);
			s->fd = -1;
			if (st == ADM_NET_TLS) {
				fprintf(stderr, "Error: TLS connection to %s failed: %s%s\n", s->where,
					why, hint(s, ADM_NET_TLS, why));
				return 1;
			}
		}
	}
	if (st == ADM_NET_OK)
		return 0;
	if (st == ADM_NET_RESOLVE)
		fprintf(stderr, "Error: Failed to connect on %s:%s with %s\n", s->host, port,
			gai_strerror(gai_error));
	else if (st == ADM_NET_TIMEOUT)
		fprintf(stderr, "Error: Timed out connecting to %s after %s seconds.\n", s->where,
			s->timeout_arg);
	else
		fprintf(stderr, "Error: Error connecting to %s: %s%s\n", s->where,
			strerror(adm_net_errno()), hint(s, st, NULL));
	return 1;
}

/* send_command sends cmd's line, with value appended when the command takes one, before
 * deadline_ms. Returns 0, or 1 after printing the error. */
static int send_command(struct session *s, const struct adm_command *cmd, const char *value,
			int64_t deadline_ms)
{
	size_t len = strlen(cmd->line) + (value != NULL ? strlen(value) : 0) + 2;
	char *line = malloc(len + 1);
	if (line == NULL) {
		fprintf(stderr, "Error: out of memory\n");
		return 1;
	}
	snprintf(line, len + 1, "%s%s\r\n", cmd->line, value != NULL ? value : "");
	enum adm_net_status st = adm_net_send(s->fd, line, len, deadline_ms);
	free(line);
	if (st == ADM_NET_OK)
		return 0;
	if (st == ADM_NET_TIMEOUT)
		fprintf(stderr, "Error: Timed out after %s seconds writing to %s\n", s->timeout_arg,
			s->where);
	else if (st == ADM_NET_TLS)
		fprintf(stderr, "Error: TLS error while writing data to %s: %s%s\n", s->where,
			adm_net_tls_error(), hint(s, st, adm_net_tls_error()));
	else
		fprintf(stderr, "Error: Error occurred while writing data to %s: %s%s\n", s->where,
			strerror(adm_net_errno()), hint(s, st, NULL));
	return 1;
}

/* rbuf_reserve makes room for at least one more byte, doubling the buffer up to MAX_REPLY.
 * Returns 0, or -1 when the limit is reached or memory runs out. */
static int rbuf_reserve(struct rbuf *b)
{
	if (b->len < b->cap)
		return 0;
	size_t cap = b->cap == 0 ? INITIAL_BUFFER : b->cap * 2;
	if (cap > MAX_REPLY)
		cap = MAX_REPLY;
	if (cap <= b->len)
		return -1;
	char *data = realloc(b->data, cap);
	if (data == NULL)
		return -1;
	b->data = data;
	b->cap = cap;
	return 0;
}

/* rbuf_consume drops the first n bytes held. */
static void rbuf_consume(struct rbuf *b, size_t n)
{
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

/* report_read_error prints why a reply could not be read; returns 1. */
static int report_read_error(const struct session *s, enum adm_net_status st)
{
	if (st == ADM_NET_CLOSED && !s->replied && !s->tls)
		fprintf(stderr, "Error: Socket was shutdown while reading from %s (is this a TLS "
			"port? use --ssl)\n", s->where);
	else if (st == ADM_NET_CLOSED)
		fprintf(stderr, "Error: Socket was shutdown while reading from %s\n", s->host);
	else if (st == ADM_NET_TIMEOUT)
		fprintf(stderr, "Error: No reply from %s within %s seconds\n", s->host,
			s->timeout_arg);
	else if (st == ADM_NET_TLS)
		fprintf(stderr, "Error: TLS error while reading data from %s: %s%s\n", s->where,
			adm_net_tls_error(), hint(s, st, adm_net_tls_error()));
	else
		fprintf(stderr, "Error: Error occurred while reading data from %s: %s%s\n", s->where,
			strerror(adm_net_errno()), hint(s, st, NULL));
	return 1;
}

/* is_shutdown says whether cmd asks the server to exit, which may close the connection
 * instead of replying. */
static bool is_shutdown(const struct adm_command *cmd)
{
	return cmd->opt == OPT_SHUTDOWN || cmd->opt == OPT_SHUTDOWN_GRACEFUL;
}

/* read_reply receives until s->in starts with a complete reply to cmd and stores its length in
 * *len; *len is 0 when a shutdown command got no reply because the server hung up, as asked.
 * Returns 0, or 1 after printing the error. */
static int read_reply(struct session *s, const struct adm_command *cmd, int64_t deadline_ms,
		      size_t *len)
{
	struct adm_reply_scan scan;
	adm_reply_scan_init(&scan, cmd->kind);
	for (;;) {
		*len = adm_reply_scan_feed(&scan, s->in.data, s->in.len);
		if (*len > 0)
			return 0;
		if (rbuf_reserve(&s->in) < 0) {
			fprintf(stderr, "Error: Reply from %s is larger than %u bytes\n", s->host,
				MAX_REPLY);
			return 1;
		}
		size_t got = 0;
		enum adm_net_status st = adm_net_recv(s->fd, s->in.data + s->in.len,
						      s->in.cap - s->in.len, deadline_ms, &got);
		if (st == ADM_NET_CLOSED && s->in.len == 0 && is_shutdown(cmd))
			return 0;
		if (st != ADM_NET_OK)
			return report_read_error(s, st);
		s->in.len += got;
		s->replied = true;
	}
}

/* print_reply prints one complete reply as gearadmin would; with lf, every "\r\n" is printed
 * as "\n" (--command: `h=$(spuradmin --command ...)` gets no '\r'). Returns 0, or 1 if the
 * output could not be written. */
static int print_reply(const char *reply, size_t len, bool lf)
{
	struct adm_reply_out out;
	adm_reply_format(reply, len, &out);
	FILE *f = out.to_stderr ? stderr : stdout;
	fputs(out.prefix, f);
	for (size_t i = 0; i < out.body_len; i++)
		if (!lf || out.body[i] != '\r' || i + 1 >= out.body_len || out.body[i + 1] != '\n')
			putc(out.body[i], f);
	if (fflush(f) != 0 || ferror(f)) {
		fprintf(stderr, "spuradmin: cannot write the reply: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* print_json_value prints the one-line reply reply[0..len) as {"key": "text"} (JSON-escaped),
 * or its error as print_reply does. Returns 0, or 1 if the output could not be written. */
static int print_json_value(const char *key, const char *reply, size_t len)
{
	struct adm_reply_out out;
	adm_reply_format(reply, len, &out);
	if (out.to_stderr || out.prefix[0] != '\0')
		return print_reply(reply, len, false);
	size_t n = out.body_len;
	while (n > 0 && (out.body[n - 1] == '\n' || out.body[n - 1] == '\r'))
		n--;
	printf("{\"%s\": \"", key);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out.body[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	printf("\"}\n");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "spuradmin: cannot write the reply: %s\n", strerror(errno));
		return 1;
	}
	return 0;
}

/* run_command sends one command and prints its reply. Returns 0, or 1 after printing the error
 * (the session is then unusable). */
static int run_command(struct session *s, const struct adm_command *cmd, const char *value)
{
	int64_t deadline_ms = adm_net_now_ms() + s->timeout_ms;
	if (send_command(s, cmd, value, deadline_ms) != 0)
		return 1;
	size_t len = 0;
	if (read_reply(s, cmd, deadline_ms, &len) != 0)
		return 1;
	if (len == 0)
		return 0; /* a shutdown answered by hanging up */
	int rc = cmd->json_key != NULL ? print_json_value(cmd->json_key, s->in.data, len)
					: print_reply(s->in.data, len, cmd->opt == OPT_COMMAND);
	if (rc == 0 && (cmd->opt == OPT_COMMAND || is_shutdown(cmd)) && len >= 3 &&
	    memcmp(s->in.data, "ERR", 3) == 0)
		rc = 1; /* a script learns that the server refused it */
	rbuf_consume(&s->in, len);
	return rc;
}

/* session_of is an unconnected session for the host and timeouts opts name. */
static struct session session_of(const struct adm_options *opts, int timeout_ms)
{
	struct session s = {
		.fd = -1,
		.host = adm_opts_value(opts, OPT_HOST, DEFAULT_HOST),
		.timeout_arg = adm_opts_value(opts, OPT_TIMEOUT, DEFAULT_TIMEOUT),
		.timeout_ms = timeout_ms,
		.in = {NULL, 0, 0},
	};
	return s;
}

/* run_all connects and runs every requested command in order, stopping at the first failure.
 * Returns the exit status. */
static int run_all(const struct adm_options *opts, int timeout_ms)
{
	struct session s = session_of(opts, timeout_ms);
	int rc = open_session(&s, opts);
	for (size_t i = 0; rc == 0 && i < N_COMMANDS; i++) {
		if (!opts->given[commands[i].opt])
			continue;
		const struct adm_command *cmd = &commands[i];
		for (size_t k = 0; opts->given[OPT_JSON] && k < sizeof json_commands /
								  sizeof json_commands[0]; k++)
			if (json_commands[k].opt == cmd->opt)
				cmd = &json_commands[k];
		rc = run_command(&s, cmd, opts->value[commands[i].opt]);
	}
	if (s.fd >= 0)
		adm_net_close(s.fd);
	free(s.in.data);
	return rc;
}

/* run_top connects and runs the live view. Returns the exit status. */
static int run_top(const struct adm_options *opts, int timeout_ms)
{
	struct session s = session_of(opts, timeout_ms);
	if (open_session(&s, opts) != 0)
		return 1;
	char server[512];
	snprintf(server, sizeof server, "%s", s.where);
	struct top_config cfg = {
		.server = server,
		.timeout_arg = s.timeout_arg,
		.timeout_ms = timeout_ms,
		.interval_ms = parse_interval(adm_opts_value(opts, OPT_INTERVAL, DEFAULT_INTERVAL)),
	};
	int rc = top_run(s.fd, &cfg);
	adm_net_close(s.fd);
	return rc;
}

/* run_dump connects and runs --dump or --load. Returns the exit status. */
static int run_dump(const struct adm_options *opts, int timeout_ms)
{
	struct session s = session_of(opts, timeout_ms);
	if (open_session(&s, opts) != 0)
		return 1;
	int rc = opts->given[OPT_DUMP]
			 ? adm_dump_run(s.fd, s.host, timeout_ms, opts->value[OPT_DUMP])
			 : adm_load_run(s.fd, s.host, timeout_ms, opts->value[OPT_LOAD]);
	adm_net_close(s.fd);
	return rc;
}

/* main parses the command line, prints help or a usage error, or runs the commands. */
int main(int argc, char **argv)
{
	struct adm_options opts;
	char err[1024];
	if (argc > 0 && argv[0] != NULL && argv[0][0] != '\0')
		program_name = argv[0];
	if (adm_opts_parse(argc, argv, &opts, err, sizeof err) != 0)
		return usage_error(err);
	if (opts.given[OPT_HELP]) {
		adm_opts_help(stdout);
		return 0;
	}
	if (opts.given[OPT_VERSION]) {
		printf("spuradmin (Spur) %s\n", PACKAGE_VERSION);
		return 0;
	}
	int timeout_ms = 0;
	int rc = validate(&opts, &timeout_ms);
	if (rc != 0)
		return rc;
	if (opts.given[OPT_TOP])
		return run_top(&opts, timeout_ms);
	if (opts.given[OPT_DUMP] || opts.given[OPT_LOAD])
		return run_dump(&opts, timeout_ms);
	if (!any_command(&opts)) {
		printf("No option execution operation given.\n\n");
		adm_opts_help(stdout);
		return 1;
	}
	return run_all(&opts, timeout_ms);
}
