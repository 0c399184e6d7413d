/* SPDX-License-Identifier: BSD-3-Clause */
/* reverse_worker: a worker for the function "reverse": the result is the workload reversed.
 * Written only against libgearman's public API, so it builds with libgearman-compat and with
 * libgearman. Usage: reverse_worker [-h host] [-p port] [-c count] [-t timeout_ms] [-f function]
 *                                   [-i identifier] [-s] [-v]
 *   -c N  exit after N jobs (default: run until an error)
 *   -t T  wait at most T ms for a job; on timeout keep waiting (so epoch jobs are noticed)
 *   -s    stream: send the result one byte at a time with WORK_DATA and WORK_STATUS
 *   -v    print each job's handle, function, unique and workload */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* struct options holds what the command line asked for. */
struct options {
    int stream;  /* send WORK_DATA per byte */
    int verbose; /* print each job */
};

/* reverse is the worker function: it returns a malloc()ed reversed copy of the workload. */
static void *reverse(gearman_job_st *job, void *context, size_t *result_size,
                     gearman_return_t *ret_ptr)
{
    const struct options *opt = context;
    const char *in = gearman_job_workload(job);
    size_t n = gearman_job_workload_size(job);
    if (opt->verbose) {
        printf("Job=%s Function=%s Unique=%s Workload=%.*s\n", gearman_job_handle(job),
               gearman_job_function_name(job), gearman_job_unique(job), (int)n, in ? in : "");
        fflush(stdout);
    }
    char *out = malloc(n + 1);
    if (out == NULL) {
        *ret_ptr = GEARMAN_WORK_FAIL;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = in[n - 1 - i];
    out[n] = '\0';
    if (opt->stream) {
        for (size_t i = 0; i < n; i++) {
            if (gearman_failed(gearman_job_send_data(job, &out[i], 1)) ||
                gearman_failed(gearman_job_send_status(job, (uint32_t)(i + 1), (uint32_t)n))) {
                free(out);
                *ret_ptr = GEARMAN_WORK_FAIL;
                return NULL;
            }
        }
        free(out); /* everything went out as WORK_DATA: complete with no payload */
        *ret_ptr = GEARMAN_SUCCESS;
        *result_size = 0;
        return NULL;
    }
    *ret_ptr = GEARMAN_SUCCESS;
    *result_size = n;
    return out;
}

int main(int argc, char **argv)
{
    const char *host = "localhost";
    const char *function = "reverse";
    const char *identifier = NULL;
    in_port_t port = 4730;
    long count = -1;
    int timeout = -1;
    struct options opt = {0, 0};
    int c;
    while ((c = getopt(argc, argv, "h:p:c:t:f:i:sv")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 'c': count = atol(optarg); break;
        case 't': timeout = atoi(optarg); break;
        case 'f': function = optarg; break;
        case 'i': identifier = optarg; break;
        case 's': opt.stream = 1; break;
        case 'v': opt.verbose = 1; break;
        default:
            fprintf(stderr, "usage: %s [-h host] [-p port] [-c count] [-t ms] [-f function] "
                            "[-i id] [-s] [-v]\n", argv[0]);
            return 2;
        }
    }
    gearman_worker_st *worker = gearman_worker_create(NULL);
    if (worker == NULL) {
        fprintf(stderr, "reverse_worker: out of memory\n");
        return 1;
    }
    int status = 0;
    if (gearman_failed(gearman_worker_add_server(worker, host, port))) {
        fprintf(stderr, "reverse_worker: %s\n", gearman_worker_error(worker));
        status = 1;
        goto out;
    }
    if (timeout >= 0)
        gearman_worker_set_timeout(worker, timeout);
    if (identifier != NULL &&
        gearman_failed(gearman_worker_set_identifier(worker, identifier, strlen(identifier)))) {
        fprintf(stderr, "reverse_worker: %s\n", gearman_worker_error(worker));
        status = 1;
        goto out;
    }
    if (gearman_failed(gearman_worker_add_function(worker, function, 0, reverse, &opt))) {
        fprintf(stderr, "reverse_worker: %s\n", gearman_worker_error(worker));
        status = 1;
        goto out;
    }
    for (long done = 0; count < 0 || done < count;) {
        gearman_return_t rc = gearman_worker_work(worker);
        if (rc == GEARMAN_TIMEOUT)
            continue;
        if (gearman_failed(rc)) {
            fprintf(stderr, "reverse_worker: %s\n", gearman_worker_error(worker));
            status = 1;
            break;
        }
        done++;
    }
out:
    gearman_worker_free(worker);
    return status;
}
