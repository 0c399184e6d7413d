/* SPDX-License-Identifier: BSD-3-Clause */
/* feature_set: every feature beyond Gearman attached in one place (feature_set.h). */
#include "feature_set.h"

#include "jobx_store.h"
#include "recur.h"

int features_attach(struct engine *e)
{
    if (jobx_store_attach(e) != 0) /* retries, dead letters, dependencies, and their rows */
        return -1;
    if (recur_attach(e) != 0) /* recurring schedules */
        return -1;
    return 0;
}
