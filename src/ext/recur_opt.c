/* SPDX-License-Identifier: BSD-3-Clause */
/* recur_opt: the option rows of recurring schedules. Pure: util only. */
#include "recur_opt.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "opt.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

/* tz_known reports whether zone names a time zone: "UTC", or a file of the zoneinfo database
 * (an absolute path, or a name relative to /usr/share/zoneinfo without ".."). */
static int tz_known(const char *zone)
{
    if (strcmp(zone, "UTC") == 0)
        return 1;
    if (zone[0] == '\0' || strstr(zone, "..") != NULL || strlen(zone) > 200)
        return 0;
    char path[256];
    snprintf(path, sizeof path, "%s%s", zone[0] == '/' ? "" : "/usr/share/zoneinfo/", zone);
    return access(path, R_OK) == 0;
}

/* set_schedule_tz sets --schedule-tz=ZONE, a zone tz_known knows. */
static int set_schedule_tz(struct opt_ctx *x, const char *arg)
{
    if (!tz_known(arg))
        return opt_errf(x, "unknown --schedule-tz '%s' (a zone of /usr/share/zoneinfo such as "
                           "Europe/Berlin, or UTC)", arg);
    opt_set_str(&CFG(x)->schedule_tz, arg);
    return 0;
}

/* The values of --schedule-catchup. */
static const struct opt_choice catchup_choices[] = {{"skip", 0}, {"once", 1}, {NULL, 0}};

/* The rows of the --help part "Recurring schedules". */
static const struct opt recur_rows[] = {
    {.name = "schedule-tz", .arg = "ZONE",
     .parse = OPT_P_CUSTOM, .set = set_schedule_tz, .has_arg = 1,
     .help = "time zone of cron schedules, e.g. Europe/Berlin (TZ is set\n"
              "to it at start; default: the process's TZ)",
     .section = CONFIG_HELP_SCHEDULE, .rank = 10},
    {.name = "schedule-catchup", .arg = "P",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(schedule_catchup),
     .choices = catchup_choices, .err = "invalid --schedule-catchup '%s' (skip or once)",
     .help = "firings missed while the server was down: skip (default)\n"
              "or once (one firing at start for all that were missed)",
     .section = CONFIG_HELP_SCHEDULE, .rank = 20},
    {.name = "max-schedules", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_schedules), .lo = 1, .hi = 1000000,
     .def = 10000, .err = "invalid --max-schedules '%s' (1..1000000)",
     .help = "schedules at once (default 10000)",
     .section = CONFIG_HELP_SCHEDULE, .rank = 30},
};

const struct opt_table recur_options = {recur_rows, sizeof recur_rows / sizeof recur_rows[0]};
