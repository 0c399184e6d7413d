/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_opt: the option rows of retries, dead letters and dependencies. Pure: util only. */
#include "jobx_opt.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* parse_retry parses FUNC:COUNT:BACKOFF:MAX (the last three colons split it, so FUNC may hold
 * colons) into r, COUNT at least 1. Returns 0 or -1. */
static int parse_retry(const char *s, struct config_retry *r)
{
    const char *c[3];
    const char *end = s + strlen(s);
    for (int i = 2; i >= 0; i--) {
        const char *p = end;
        while (p > s && p[-1] != ':')
            p--;
        if (p == s)
            return -1;
        c[i] = p - 1;
        end = p - 1;
    }
    size_t fl = (size_t)(c[0] - s);
    if (fl == 0 || fl > 512)
        return -1;
    char nums[3][64];
    for (int i = 0; i < 3; i++) {
        const char *from = c[i] + 1, *to = i < 2 ? c[i + 1] : s + strlen(s);
        if ((size_t)(to - from) >= sizeof nums[i])
            return -1;
        memcpy(nums[i], from, (size_t)(to - from));
        nums[i][to - from] = '\0';
    }
    uint32_t n;
    double b, m;
    if (config_parse_retry_numbers(nums[0], nums[1], nums[2], &n, &b, &m) != 0 || n == 0)
        return -1;
    /* FUNC is kept in the escaped form of the admin listings (%09 is a TAB); jobx decodes it
     * and checks it with func_name_ok, the one name check of every entry point */
    char *f = strndup(s, fl);
    if (f == NULL)
        return -1;
    *r = (struct config_retry){f, n, b, m};
    return 0;
}

/* set_retry appends a --retry=FUNC:COUNT:BACKOFF:MAX policy. */
static int set_retry(struct opt_ctx *x, const char *arg)
{
    struct config *c = CFG(x);
    if (c->nretry == CONFIG_MAX_RETRY)
        return opt_errf(x, "too many --retry policies (at most %d)", CONFIG_MAX_RETRY);
    if (parse_retry(arg, &c->retry[c->nretry]) != 0)
        return opt_errf(x, "invalid --retry '%s' (FUNC:COUNT:BACKOFF:MAX, COUNT 1..1000, "
                           "0 <= BACKOFF <= MAX <= 2592000 seconds)", arg);
    c->nretry++;
    return 0;
}

/* The rows of --retry and the dead-letter and dependency limits. */
static const struct opt jobx_rows[] = {
    {.name = "max-failed-jobs", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_failed_jobs), .lo = 0, .hi = 100000000,
     .def = 10000,
     .help = "jobs kept in the dead-letter list; the oldest are dropped\n"
              "past it (default 10000)",
     .section = CONFIG_HELP_SPUR, .rank = 360},
    {.name = "max-waiting-jobs", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_waiting_jobs), .lo = 1, .hi = 100000000,
     .def = 1000000, .err = "invalid --max-waiting-jobs '%s' (1..100000000)",
     .help = "jobs waiting for others (submit --after) at once; more\n"
              "are refused with WAITING_FULL (default 1000000)",
     .section = CONFIG_HELP_SPUR, .rank = 370},
    {.name = "max-dependents", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_dependents), .lo = 1, .hi = 10000000,
     .def = 100000, .err = "invalid --max-dependents '%s' (1..10000000)",
     .help = "jobs that may wait for one job; more are refused with\n"
              "TOO_MANY_DEPENDENTS (default 100000)",
     .section = CONFIG_HELP_SPUR, .rank = 380},
    {.name = "retry", .arg = "FUNC:COUNT:BACKOFF:MAX",
     .parse = OPT_P_CUSTOM, .set = set_retry, .has_arg = 1,
     .help = "retry policy of FUNC: a background job that fails\n"
              "runs again up to COUNT times, after min(MAX, BACKOFF *\n"
              "2^(n-1)) seconds with jitter, then goes to the dead-letter\n"
              "list (repeatable; the admin 'retry' changes them)",
     .section = CONFIG_HELP_SPUR, .rank = 390},
};

const struct opt_table jobx_options = {jobx_rows, sizeof jobx_rows / sizeof jobx_rows[0]};
