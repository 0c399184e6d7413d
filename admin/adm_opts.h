/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_opts: spuradmin's command line, parsed the way gearadmin parses its own.
 *
 * Pure: no I/O except adm_opts_help, which writes to the FILE it is given.
 * gearadmin's parser (boost::program_options) has quirks that scripts may rely on, so this
 * one copies them: unique prefixes of long options are accepted ("--stat"), an option that
 * takes a value swallows the next word unless that word is exactly a known short option
 * ("--cancel-job --status" cancels a job named "--status"), short options bundle ("-Sp4730"),
 * words that are not options are ignored (except the word "top", Spur's, which means --top),
 * and an option given twice is an error.
 * Spur's own options (--version, --stats, --json, --top, --interval, --command, --dump, --load,
 * the --ssl-* files) match only their exact names, so the prefixes gearadmin
 * accepts ("--stat" for --status) keep their meaning.
 */
#ifndef SPUR_ADMIN_ADM_OPTS_H
#define SPUR_ADMIN_ADM_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every option spuradmin knows, in the order --help lists them. */
enum adm_opt {
	OPT_HELP,
	OPT_VERSION,
	OPT_HOST,
	OPT_PORT,
	OPT_SERVER_VERSION,
	OPT_SERVER_VERBOSE,
	OPT_CREATE_FUNCTION,
	OPT_CANCEL_JOB,
	OPT_DROP_FUNCTION,
	OPT_SHOW_UNIQUE_JOBS,
	OPT_SHOW_JOBS,
	OPT_GETPID,
	OPT_STATUS,
	OPT_PRIORITY_STATUS,
	OPT_WORKERS,
	OPT_SHUTDOWN,
	OPT_SHUTDOWN_GRACEFUL,
	OPT_STATS,
	OPT_JSON,
	OPT_TOP,
	OPT_INTERVAL,
	OPT_TIMEOUT,
	OPT_SSL,
	OPT_SSL_CA_FILE,
	OPT_SSL_CERTIFICATE,
	OPT_SSL_KEY,
	OPT_COMMAND,
	OPT_DUMP,
	OPT_LOAD,
	OPT_COUNT /* number of options, not an option */
};

/* The result of parsing argv. */
struct adm_options {
	bool given[OPT_COUNT];         /* the option appeared on the command line */
	const char *value[OPT_COUNT];  /* its argument (borrowed from argv), or NULL */
};

/* adm_opts_parse fills opts from argv[1..argc-1]. It returns 0 on success, or -1 with a
 * one-line message (no newline, no program name) in err, which holds errlen bytes and is
 * truncated if needed. Values in opts point into argv. */
int adm_opts_parse(int argc, char **argv, struct adm_options *opts, char *err, size_t errlen);

/* adm_opts_value returns the value of opt, or fallback when it was not given. */
const char *adm_opts_value(const struct adm_options *opts, enum adm_opt opt, const char *fallback);

/* adm_opts_long_name returns the long name of opt without its leading dashes ("cancel-job"). */
const char *adm_opts_long_name(enum adm_opt opt);

/* adm_opts_help writes the option summary (the --help text) to f. */
void adm_opts_help(FILE *f);

#ifdef __cplusplus
}
#endif

#endif
