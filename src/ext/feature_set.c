/* SPDX-License-Identifier: BSD-3-Clause */
/* feature_set: every feature beyond Gearman attached in one place (feature_set.h). */
#include "feature_set.h"

#include "admin.h"
#include "broadcast.h"
#include "broadcast_admin.h"
#include "dash_data.h"
#include "dump.h"
#include "engine.h"
#include "flow.h"
#include "flow_admin.h"
#include "jobx_admin.h"
#include "jobx_counters.h"
#include "jobx_store.h"
#include "lifetime.h"
#include "lifetime_admin.h"
#include "metrics.h"
#include "recur.h"

int features_attach(struct engine *e)
{
    int first = e->ext.recur == NULL; /* the rows below are added once */
    if (jobx_store_attach(e) != 0) /* retries, dead letters, dependencies */
        return -1;
    if (recur_attach(e) != 0) /* recurring schedules */
        return -1;
    if (broadcast_attach(e) != 0) /* broadcast functions */
        return -1;
    if (flow_attach(e) != 0) /* flow control: limits, weights, pause */
        return -1;
    dash_func_marks = flow_marks; /* the dashboard marks paused and limited functions */
    if (lifetime_attach(e) != 0) /* per-job timeouts and times to live (after jobx_store) */
        return -1;
    if (!first)
        return 0;
    /* their admin commands (admin.h's command table) */
    if (jobx_admin_register(e) != 0 || recur_admin_register(e) != 0 || dump_admin_register(e) != 0)
        return -1;
    if (broadcast_admin_register(e) != 0)
        return -1;
    if (flow_admin_register(e) != 0 || metrics_add(e, &flow_counters) != 0)
        return -1;
    if (lifetime_admin_register(e) != 0)
        return -1;
    /* their rows of stats, stats json and metrics (metrics.h's counter table) */
    if (metrics_add(e, &jobx_counters) != 0 || metrics_add(e, &recur_counters) != 0)
        return -1;
    if (metrics_add(e, &broadcast_counters) != 0 || metrics_add(e, &lifetime_counters) != 0)
        return -1;
    return 0;
}
