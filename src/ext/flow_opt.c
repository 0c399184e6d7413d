/* SPDX-License-Identifier: BSD-3-Clause */
/* flow_opt: the option rows of flow control (flow_opt.h). Pure: util and flow_spec only. */
#include "flow_opt.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "flow_spec.h"
#include "opt.h"

#define CFG(x) ((struct config *)(x)->cfg)

#define MAX_LIMITS 10000 /* --limit may be given this many times */

/* set_limit appends a --limit=FUNC:SPEC after checking SPEC (FUNC is everything before the
 * last ':', in the escaped form of the listings; flow.c decodes and checks it). */
static int set_limit(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    const char *colon = strrchr(arg, ':');
    struct flow_settings s;
    char why[200];
    flow_defaults(&s);
    if (colon == NULL || colon == arg || colon[1] == '\0' ||
        flow_parse_spec(colon + 1, strlen(colon + 1), &s, why, sizeof why) != 0)
        return opt_errf(x, "invalid --limit '%s' (FUNC:concurrency=N,rate=R/s,"
                           "key-concurrency=N,key-rate=R/s,weight=W; R/s, R/m or R/h)", arg);
    if (c->nlimits >= MAX_LIMITS)
        return opt_errf(x, "too many --limit options (at most %d)", MAX_LIMITS);
    char **n = realloc(c->limits, sizeof *n * ((size_t)c->nlimits + 1));
    if (n == NULL)
        return opt_errf(x, "out of memory");
    c->limits = n;
    if ((n[c->nlimits] = strdup(arg)) == NULL)
        return opt_errf(x, "out of memory");
    c->nlimits++;
    return 0;
}

/* set_separator sets --limit-key-separator=C, one byte other than NUL. */
static int set_separator(struct opt_ctx *x, const char *arg)
{
    if (strlen(arg) != 1)
        return opt_errf(x, "invalid --limit-key-separator '%s' (one character)", arg);
    CFG(x)->limit_key_separator = arg[0];
    return 0;
}

/* The rows of flow control, in the --help part of Spur's own options. */
static const struct opt flow_rows[] = {
    {.name = "limit", .arg = "FUNC:SPEC",
     .parse = OPT_P_CUSTOM, .set = set_limit, .has_arg = 1,
     .help = "flow control of FUNC (repeatable; docs/FLOW-CONTROL.md): SPEC is\n"
              "concurrency=N,rate=R/s,key-concurrency=N,key-rate=R/s,weight=W\n"
              "(any of them; rates R/s, R/m or R/h)",
     .section = CONFIG_HELP_SPUR, .rank = 395},
    {.name = "limit-key-separator", .arg = "C",
     .parse = OPT_P_CUSTOM, .set = set_separator, .has_arg = 1,
     .help = "a job's key for key limits is its unique ID up to the first C\n"
              "(the whole unique without one; default ':')",
     .section = CONFIG_HELP_SPUR, .rank = 396},
};

const struct opt_table flow_options = {flow_rows, sizeof flow_rows / sizeof flow_rows[0]};
