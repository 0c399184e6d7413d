/* SPDX-License-Identifier: BSD-3-Clause */
/* lifetime_opt: the option rows of per-job timeouts and times to live. Pure: util only. */
#include "lifetime_opt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* parse_life parses FUNC:N (the last colon splits it, so FUNC may hold colons), N a whole
 * number in 1..max, into *l. Returns 0 or -1. */
static int parse_life(const char *s, uint32_t max, struct config_life *l)
{
    const char *c = strrchr(s, ':');
    if (c == NULL || c == s || (size_t)(c - s) > 512 || c[1] == '\0')
        return -1;
    uint64_t v = 0;
    for (const char *p = c + 1; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || (v = v * 10 + (uint64_t)(*p - '0')) > max)
            return -1;
    }
    if (v == 0)
        return -1;
    /* FUNC is kept in the escaped form of the admin listings (%09 is a TAB); lifetime decodes
     * it and checks it with func_name_ok */
    char *f = strndup(s, (size_t)(c - s));
    if (f == NULL)
        return -1;
    *l = (struct config_life){f, (uint32_t)v};
    return 0;
}

/* set_job_timeout appends a --job-timeout=FUNC:MS default. */
static int set_job_timeout(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    if (c->njob_timeout == CONFIG_MAX_LIFE)
        return opt_errf(x, "too many --job-timeout defaults (at most %d)", CONFIG_MAX_LIFE);
    if (parse_life(arg, UINT32_MAX, &c->job_timeout[c->njob_timeout]) != 0)
        return opt_errf(x, "invalid --job-timeout '%s' (FUNC:MS, MS 1..4294967295)", arg);
    c->njob_timeout++;
    return 0;
}

/* set_job_ttl appends a --job-ttl=FUNC:SECONDS default. */
static int set_job_ttl(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    if (c->njob_ttl == CONFIG_MAX_LIFE)
        return opt_errf(x, "too many --job-ttl defaults (at most %d)", CONFIG_MAX_LIFE);
    if (parse_life(arg, 31536000u, &c->job_ttl[c->njob_ttl]) != 0)
        return opt_errf(x, "invalid --job-ttl '%s' (FUNC:SECONDS, SECONDS 1..31536000)", arg);
    c->njob_ttl++;
    return 0;
}

/* The values of --expired. */
static const struct opt_choice expired_choices[] = {{"dead-letter", 0}, {"drop", 1},
                                                    {NULL, 0}};

/* The rows of --job-timeout, --job-ttl and --expired. */
static const struct opt lifetime_rows[] = {
    {.name = "job-timeout", .arg = "FUNC:MS",
     .parse = OPT_P_CUSTOM, .set = set_job_timeout, .has_arg = 1,
     .help = "default timeout of FUNC's jobs: one fails MS milliseconds\n"
              "after its start on a worker, as at a CAN_DO_TIMEOUT\n"
              "(repeatable; a submit's own timeout wins)",
     .section = CONFIG_HELP_SPUR, .rank = 391},
    {.name = "job-ttl", .arg = "FUNC:SECONDS",
     .parse = OPT_P_CUSTOM, .set = set_job_ttl, .has_arg = 1,
     .help = "default time to live of FUNC's jobs: one that no worker\n"
              "started within SECONDS expires (repeatable; a submit's own\n"
              "TTL wins)",
     .section = CONFIG_HELP_SPUR, .rank = 392},
    {.name = "expired", .arg = "P",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(expired_drop),
     .choices = expired_choices, .err = "invalid --expired '%s' (dead-letter or drop)",
     .help = "what becomes of a background job whose time to live\n"
              "passed: dead-letter (default: the dead-letter list, reason\n"
              "expired) or drop",
     .section = CONFIG_HELP_SPUR, .rank = 393},
};

const struct opt_table lifetime_options = {lifetime_rows,
                                           sizeof lifetime_rows / sizeof lifetime_rows[0]};
