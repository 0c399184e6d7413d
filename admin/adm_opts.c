/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_opts: spuradmin's command-line parser; see adm_opts.h for the rules it copies. */
#include "adm_opts.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* One option as the parser and --help see it. */
struct opt_def {
	const char *long_name; /* name after "--" */
	char short_name;       /* letter after "-", or 0 when there is none */
	bool has_arg;          /* the option takes a value */
	const char *label;     /* left column of --help, after the names */
	const char *help;      /* right column of --help */
};

/* Indexed by enum adm_opt. */
static const struct opt_def defs[OPT_COUNT] = {
	[OPT_HELP] = {"help", 0, false, "", "Print this help and exit."},
	[OPT_VERSION] = {"version", 0, false, "", "Spur: print spuradmin's version and exit."},
	[OPT_HOST] = {"host", 'h', true, " arg (=localhost)",
		      "Server host name or address; /PATH: a unix socket"},
	[OPT_PORT] = {"port", 'p', true, " arg (=4730)", "Server port number or service name"},
	[OPT_SERVER_VERSION] = {"server-version", 0, false, "", "Print the server's version."},
	[OPT_SERVER_VERBOSE] = {"server-verbose", 0, false, "", "Print the server's log level."},
	[OPT_CREATE_FUNCTION] = {"create-function", 0, true, " arg",
				 "Create a function on the server."},
	[OPT_CANCEL_JOB] = {"cancel-job", 0, true, " arg",
			    "Cancel the job with this handle, queued or running."},
	[OPT_DROP_FUNCTION] = {"drop-function", 0, true, " arg", "Drop a function from the server."},
	[OPT_SHOW_UNIQUE_JOBS] = {"show-unique-jobs", 0, false, "",
				  "List the unique IDs of the server's jobs."},
	[OPT_SHOW_JOBS] = {"show-jobs", 0, false, "", "List the server's jobs."},
	[OPT_GETPID] = {"getpid", 0, false, "", "Print the server's process ID."},
	[OPT_STATUS] = {"status", 0, false, "", "Jobs, running jobs and workers per function."},
	[OPT_PRIORITY_STATUS] = {"priority-status", 0, false, "",
				 "Queued jobs per function and priority."},
	[OPT_WORKERS] = {"workers", 0, false, "", "List connections and their functions."},
	[OPT_SHUTDOWN] = {"shutdown", 0, false, "", "Ask the server to shut down now."},
	[OPT_SHUTDOWN_GRACEFUL] = {"shutdown-graceful", 0, false, "",
				   "Ask the server to stop listening and exit when idle."},
	[OPT_STATS] = {"stats", 0, false, "",
		       "Spur: the server's counters (STAT lines; see OBSERVABILITY.md)."},
	[OPT_JSON] = {"json", 0, false, "",
		      "Spur: every read option prints JSON (one line each)."},
	[OPT_TOP] = {"top", 0, false, "",
		     "Spur: a live full-screen view (also `spuradmin top`); q quits."},
	[OPT_INTERVAL] = {"interval", 0, true, " arg (=1)", "Seconds between --top refreshes."},
	[OPT_TIMEOUT] = {"timeout", 0, true, " arg (=10)",
			 "Seconds to wait for the connection and each reply."},
	[OPT_SSL] = {"ssl", 'S', false, "", "Enable SSL connections."},
	[OPT_SSL_CA_FILE] = {"ssl-ca-file", 0, true, " arg",
			     "Spur: CA file ($GEARMAND_CA_CERTIFICATE, else the system's)."},
	[OPT_SSL_CERTIFICATE] = {"ssl-certificate", 0, true, " arg",
				 "Spur: client certificate ($GEARMAN_CLIENT_PEM)."},
	[OPT_SSL_KEY] = {"ssl-key", 0, true, " arg",
			 "Spur: key of the client certificate ($GEARMAN_CLIENT_KEY)."},
	[OPT_COMMAND] = {"command", 0, true, " arg",
			 "Spur: send this admin line, print the reply; exit 1 on ERR."},
	[OPT_DUMP] = {"dump", 0, true, " FILE",
		      "Spur: write every job and record to FILE (- = stdout)."},
	[OPT_LOAD] = {"load", 0, true, " FILE",
		      "Spur: submit the jobs and records of dump FILE (- = stdin)."},
};

/* Width of the left column of --help, names included. */
enum { HELP_COLUMN = 31 };

/* Parser state shared by the helpers below. */
struct parse {
	int argc;                   /* argument count */
	char **argv;                /* the arguments */
	int next;                   /* index of the next unread word */
	struct adm_options *opts;   /* where results go */
	int duplicate;              /* first option seen twice, or -1 */
	char *err;                  /* message buffer */
	size_t errlen;              /* its size */
};

/* fail formats a message into p->err and returns -1. */
static int fail(struct parse *p, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err, p->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

/* record stores one occurrence of opt; a second occurrence is remembered, and reported only
 * if no syntax error turns up later (gearadmin reports those first). */
static void record(struct parse *p, enum adm_opt opt, const char *value)
{
	if (p->opts->given[opt]) {
		if (p->duplicate < 0)
			p->duplicate = (int)opt;
		return;
	}
	p->opts->given[opt] = true;
	p->opts->value[opt] = value;
}

/* find_short returns the option whose short name is c, or -1. */
static int find_short(char c)
{
	for (int i = 0; i < OPT_COUNT; i++)
		if (defs[i].short_name != 0 && defs[i].short_name == c)
			return i;
	return -1;
}

/* is_short_option says whether word is exactly "-X" for a known short option X: such a word
 * is never taken as the value of the option before it. */
static bool is_short_option(const char *word)
{
	return word[0] == '-' && word[1] != '\0' && word[2] == '\0' && find_short(word[1]) >= 0;
}

/* take_next_value consumes the next word as the value of opt and records it, or fails with
 * "missing" when there is no usable word. */
static int take_next_value(struct parse *p, enum adm_opt opt)
{
	if (p->next >= p->argc || is_short_option(p->argv[p->next]))
		return fail(p, "the required argument for option '--%s' is missing",
			    defs[opt].long_name);
	record(p, opt, p->argv[p->next++]);
	return 0;
}

/* name_order compares two option indexes by long name, for qsort. */
static int name_order(const void *a, const void *b)
{
	return strcmp(defs[*(const int *)a].long_name, defs[*(const int *)b].long_name);
}

/* append formats onto the end of p->err, keeping it NUL-terminated and truncating quietly. */
static void append(struct parse *p, const char *fmt, ...)
{
	size_t used = strlen(p->err);
	if (used + 1 >= p->errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->err + used, p->errlen - used, fmt, ap);
	va_end(ap);
}

/* fail_ambiguous reports that word matches several options, listed in name order. */
static int fail_ambiguous(struct parse *p, const char *word, int *matches, int n)
{
	qsort(matches, (size_t)n, sizeof *matches, name_order);
	fail(p, "option '%s' is ambiguous and matches ", word);
	for (int i = 0; i < n; i++)
		append(p, "%s%s'--%s'", i > 0 ? ", " : "", i == n - 1 ? "and " : "",
		       defs[matches[i]].long_name);
	return -1;
}

/* match_long finds the option named by the first len bytes of name: an exact name, or else the
 * only option the name is a prefix of. Returns the option, or -1 after reporting the word as
 * unrecognised or ambiguous. */
static int match_long(struct parse *p, const char *word, const char *name, size_t len)
{
	int matches[OPT_COUNT];
	int n = 0;
	for (int i = 0; i < OPT_COUNT; i++) {
		if (strncmp(defs[i].long_name, name, len) != 0)
			continue;
		if (defs[i].long_name[len] == '\0')
			return i;
		if (i != OPT_VERSION && i != OPT_STATS && i != OPT_JSON && i != OPT_TOP && i != OPT_INTERVAL &&
		    i != OPT_SSL_CA_FILE && i != OPT_SSL_CERTIFICATE &&
		    i != OPT_SSL_KEY && i != OPT_COMMAND && i != OPT_DUMP &&
		    i != OPT_LOAD) /* Spur's own: exact names only */
			matches[n++] = i;
	}
	if (n == 0)
		return fail(p, "unrecognised option '%s'", word);
	if (n > 1)
		return fail_ambiguous(p, word, matches, n);
	return matches[0];
}

/* parse_long handles one "--name" or "--name=value" word. */
static int parse_long(struct parse *p, const char *word)
{
	const char *name = word + 2;
	const char *eq = strchr(name, '=');
	size_t len = eq != NULL ? (size_t)(eq - name) : strlen(name);
	int opt = match_long(p, word, name, len);
	if (opt < 0)
		return -1;
	if (eq == NULL) {
		if (defs[opt].has_arg)
			return take_next_value(p, (enum adm_opt)opt);
		record(p, (enum adm_opt)opt, NULL);
		return 0;
	}
	if (eq[1] == '\0')
		return fail(p, "the argument for option '--%s' should follow immediately after "
			    "the equal sign", defs[opt].long_name);
	if (!defs[opt].has_arg)
		return fail(p, "option '--%s' does not take any arguments", defs[opt].long_name);
	record(p, (enum adm_opt)opt, eq + 1);
	return 0;
}

/* parse_short handles one "-X..." word: a bundle of short flags, where an option that takes a
 * value ends the bundle and takes the rest of the word (or the next word) as its value. */
static int parse_short(struct parse *p, const char *word)
{
	for (const char *c = word + 1; *c != '\0'; c++) {
		int opt = find_short(*c);
		if (opt < 0)
			return fail(p, "unrecognised option '%s'", word);
		if (!defs[opt].has_arg) {
			record(p, (enum adm_opt)opt, NULL);
			continue;
		}
		if (c[1] != '\0') {
			record(p, (enum adm_opt)opt, c + 1);
			return 0;
		}
		return take_next_value(p, (enum adm_opt)opt);
	}
	return 0;
}

int adm_opts_parse(int argc, char **argv, struct adm_options *opts, char *err, size_t errlen)
{
	struct parse p = {argc, argv, 1, opts, -1, err, errlen};
	bool options_ended = false;
	memset(opts, 0, sizeof *opts);
	while (p.next < argc) {
		const char *word = argv[p.next++];
		if (options_ended || word[0] != '-' || word[1] == '\0') {
			if (strcmp(word, "top") == 0)
				record(&p, OPT_TOP, NULL); /* `spuradmin top` is --top */
			continue; /* any other word is ignored, as gearadmin does */
		}
		int rc = 0;
		if (strcmp(word, "--") == 0)
			options_ended = true;
		else if (word[1] == '-')
			rc = parse_long(&p, word);
		else
			rc = parse_short(&p, word);
		if (rc < 0)
			return -1;
	}
	if (p.duplicate >= 0)
		return fail(&p, "option '--%s' cannot be specified more than once",
			    defs[p.duplicate].long_name);
	return 0;
}

const char *adm_opts_value(const struct adm_options *opts, enum adm_opt opt, const char *fallback)
{
	return opts->given[opt] && opts->value[opt] != NULL ? opts->value[opt] : fallback;
}

const char *adm_opts_long_name(enum adm_opt opt)
{
	return defs[opt].long_name;
}

void adm_opts_help(FILE *f)
{
	fputs("Options:\n", f);
	for (int i = 0; i < OPT_COUNT; i++) {
		char left[128];
		if (defs[i].short_name != 0)
			snprintf(left, sizeof left, "-%c [ --%s ]%s", defs[i].short_name,
				 defs[i].long_name, defs[i].label);
		else
			snprintf(left, sizeof left, "--%s%s", defs[i].long_name, defs[i].label);
		fprintf(f, "  %-*s %s\n", HELP_COLUMN - 1, left, defs[i].help);
	}
	fputs("\n", f);
}
