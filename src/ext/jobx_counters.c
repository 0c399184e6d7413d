/* SPDX-License-Identifier: BSD-3-Clause */
/* jobx_counters: the rows of retries, dead letters and dependencies in the counter table. */
#include "jobx_counters.h"

#include "engine.h"
#include "jobx.h"

static void get_failed(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = jobx_nfailed(src->e);
}

static void get_waiting(const struct metrics_src *src, struct metrics_value *v)
{
    v->u = jobx_nwaiting(src->e);
}

/* rows: their places ({stats, stats json, metrics}) keep the order the outputs had. */
static const struct metrics_row rows[] = {
    {.text = "retries_total", .json = "retry.retries_total", .prom = "spur_retries_total",
     .help = "Failed background jobs deferred to a retry (--retry).", .kind = METRICS_COUNTER,
     METRICS_FIELD(stats.retries), .at = {1100, 540, 440}},
    {.text = "failed_jobs", .json = "retry.failed_jobs", .prom = "spur_failed_jobs",
     .help = "Jobs in the dead-letter list (show failed jobs).", .kind = METRICS_GAUGE,
     .get = get_failed, .at = {1110, 550, 450}},
    {.text = "failed_dropped_total", .json = "retry.failed_dropped_total",
     .prom = "spur_failed_dropped_total",
     .help = "Dead-letter jobs dropped as the oldest past --max-failed-jobs.",
     .kind = METRICS_COUNTER, METRICS_FIELD(stats.failed_dropped), .at = {1120, 560, 460}},
    {.text = "waiting_jobs", .json = "retry.waiting_jobs", .prom = "spur_waiting_jobs",
     .help = "Jobs waiting for the jobs they depend on (submit --after).", .kind = METRICS_GAUGE,
     .get = get_waiting, .at = {1170, 570, 470}},
};

const struct metrics_table jobx_counters = {rows, sizeof rows / sizeof rows[0]};
