/* SPDX-License-Identifier: BSD-3-Clause */
/* cancel_worker: a worker whose long jobs stop early when the server cancels them (Spur's
 * extension, libgearman/spur.h; docs/LIBGEARMAN-COMPAT.md). The function "long" works in chunks
 * of 10 ms, as many as the workload says (default 6000: a minute), and between chunks asks
 * gearman_job_is_cancelled, which reads the JOB_CANCELLED notice the worker asked for with
 * gearman_worker_set_cancel_notify. Against a server without the extension the notice never
 * comes and every job runs to its end.
 * Usage: cancel_worker [-h host] [-p port] [-c count] [-f function]
 *   -c N  exit after N jobs (default: run until an error)
 * For each job it prints one line: "done HANDLE CHUNKS" or "cancelled HANDLE CHUNKS UNIXTIME",
 * the time (seconds, microseconds) when it stopped. */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define CHUNK_NS 10000000L /* one chunk of work: 10 ms */

/* work is the worker function: chunks of work until done or cancelled. A cancelled job fails
 * (its result goes nowhere: the server has already told its clients). */
static void *work(gearman_job_st *job, void *context, size_t *result_size,
                  gearman_return_t *ret_ptr)
{
    (void)context;
    char buf[32] = "";
    size_t n = gearman_job_workload_size(job);
    if (n > 0 && n < sizeof buf)
        memcpy(buf, gearman_job_workload(job), n);
    long chunks = n > 0 ? atol(buf) : 6000;
    long i = 0;
    for (; i < chunks; i++) {
        if (gearman_job_is_cancelled(job)) {
            struct timeval tv;
            gettimeofday(&tv, NULL);
            printf("cancelled %s %ld %ld.%06ld\n", gearman_job_handle(job), i, (long)tv.tv_sec,
                   (long)tv.tv_usec);
            fflush(stdout);
            *ret_ptr = GEARMAN_WORK_FAIL;
            *result_size = 0;
            return NULL;
        }
        struct timespec ts = {0, CHUNK_NS};
        nanosleep(&ts, NULL);
    }
    printf("done %s %ld\n", gearman_job_handle(job), i);
    fflush(stdout);
    *ret_ptr = GEARMAN_SUCCESS;
    *result_size = 4;
    char *out = malloc(4);
    if (out != NULL)
        memcpy(out, "done", 4);
    return out;
}

int main(int argc, char **argv)
{
    const char *host = "localhost";
    const char *function = "long";
    in_port_t port = 4730;
    long count = -1;
    int c;
    while ((c = getopt(argc, argv, "h:p:c:f:")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 'c': count = atol(optarg); break;
        case 'f': function = optarg; break;
        default:
            fprintf(stderr, "usage: %s [-h host] [-p port] [-c count] [-f function]\n", argv[0]);
            return 2;
        }
    }
    gearman_worker_st *worker = gearman_worker_create(NULL);
    if (worker == NULL) {
        fprintf(stderr, "cancel_worker: out of memory\n");
        return 1;
    }
    int status = 0;
    if (gearman_failed(gearman_worker_add_server(worker, host, port)) ||
        gearman_failed(gearman_worker_set_cancel_notify(worker)) ||
        gearman_failed(gearman_worker_add_function(worker, function, 0, work, NULL))) {
        fprintf(stderr, "cancel_worker: %s\n", gearman_worker_error(worker));
        status = 1;
        goto out;
    }
    for (long done = 0; count < 0 || done < count; done++) {
        gearman_return_t rc = gearman_worker_work(worker);
        if (rc != GEARMAN_WORK_FAIL && gearman_failed(rc)) { /* a cancelled job fails */
            fprintf(stderr, "cancel_worker: %s\n", gearman_worker_error(worker));
            status = 1;
            break;
        }
    }
out:
    gearman_worker_free(worker);
    return status;
}
