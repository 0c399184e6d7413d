/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel_client: a client that gives up on its job and stops the work it started (Spur's
 * extension, libgearman/spur.h; docs/LIBGEARMAN-COMPAT.md). It submits WORKLOAD to the
 * function (foreground), waits at most WAIT ms for the result, then cancels the job with
 * gearman_client_cancel_job: the server fails the task at once and tells its worker (a worker
 * that asked for the notice, as cancel_worker does, stops).
 * Usage: cancel_client [-h host] [-p port] [-f function] [-w wait_ms] [-t job_timeout_ms]
 *                      [-l ttl_s] WORKLOAD
 *   -t MS  also ask the server to fail the job after MS ms on a worker (job-timeout=MS)
 *   -l S   and to drop it when no worker started it within S seconds (job-ttl=S)
 * Prints "result BYTES" when the result came in time, else "cancelled HANDLE" (exit 0), or
 * the error (exit 1). */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *host = "localhost";
    const char *function = "long";
    in_port_t port = 4730;
    int wait_ms = 1000;
    long job_timeout = -1, ttl = -1;
    int c, bad = 0;
    while ((c = getopt(argc, argv, "h:p:f:w:t:l:")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 'f': function = optarg; break;
        case 'w': wait_ms = atoi(optarg); break;
        case 't': job_timeout = atol(optarg); break;
        case 'l': ttl = atol(optarg); break;
        default: bad = 1; break;
        }
    }
    if (bad || optind != argc - 1) {
        fprintf(stderr, "usage: %s [-h host] [-p port] [-f function] [-w wait_ms] "
                        "[-t job_timeout_ms] [-l ttl_s] WORKLOAD\n", argv[0]);
        return 2;
    }
    const char *workload = argv[optind];
    gearman_client_st *client = gearman_client_create(NULL);
    if (client == NULL) {
        fprintf(stderr, "cancel_client: out of memory\n");
        return 1;
    }
    int status = 1;
    gearman_return_t rc;
    gearman_task_st *task = NULL;
    if (gearman_failed(rc = gearman_client_add_server(client, host, port)))
        goto out;
    if (job_timeout >= 0 &&
        gearman_failed(rc = gearman_client_set_job_timeout(client, (uint32_t)job_timeout)))
        goto out;
    if (ttl >= 0 && gearman_failed(rc = gearman_client_set_job_ttl(client, (uint32_t)ttl)))
        goto out;
    gearman_client_set_timeout(client, wait_ms);
    task = gearman_client_add_task(client, NULL, NULL, function, NULL, workload,
                                   strlen(workload), &rc);
    if (task == NULL)
        goto out;
    rc = gearman_client_run_tasks(client);
    if (rc == GEARMAN_SUCCESS && gearman_task_return(task) == GEARMAN_SUCCESS) {
        printf("result %.*s\n", (int)gearman_task_data_size(task),
               (const char *)gearman_task_data(task));
        status = 0;
        goto out;
    }
    if (rc != GEARMAN_TIMEOUT || !gearman_task_is_known(task))
        goto out;
    /* no result in time: give up, and stop the work */
    gearman_client_set_timeout(client, 10000);
    if (gearman_failed(rc = gearman_client_cancel_job(client, gearman_task_job_handle(task))))
        goto out;
    printf("cancelled %s\n", gearman_task_job_handle(task));
    status = 0;
out:
    if (status != 0)
        fprintf(stderr, "cancel_client: %s\n", gearman_client_error(client) != NULL
                                                   ? gearman_client_error(client)
                                                   : gearman_strerror(rc));
    if (task != NULL)
        gearman_task_free(task);
    gearman_client_free(client);
    return status;
}
