/* SPDX-License-Identifier: BSD-3-Clause */
/* epoch_client: submits one "reverse" job to run at now + N seconds (SUBMIT_JOB_EPOCH through
 * gearman_execute and gearman_task_attr_init_epoch), prints its handle, then polls its status
 * until the server no longer knows it (or the poll budget runs out).
 * Written only against libgearman's public API (builds with libgearman-compat and libgearman).
 * Usage: epoch_client [-h host] [-p port] [-t timeout_ms] [-e seconds] [-n polls] text */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* nap sleeps for ms milliseconds between two status polls. */
static void nap(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    const char *host = "localhost";
    in_port_t port = 4730;
    int timeout = -1;
    long delay = 0;
    long polls = 100;
    int c;
    while ((c = getopt(argc, argv, "h:p:t:e:n:")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 't': timeout = atoi(optarg); break;
        case 'e': delay = atol(optarg); break;
        case 'n': polls = atol(optarg); break;
        default: optind = argc + 1; break;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: %s [-h host] [-p port] [-t ms] [-e seconds] [-n polls] text\n",
                argv[0]);
        return 2;
    }
    const char *text = argv[optind];
    gearman_client_st client;
    if (gearman_client_create(&client) == NULL)
        return 1;
    if (timeout >= 0)
        gearman_client_set_timeout(&client, timeout);
    if (gearman_failed(gearman_client_add_server(&client, host, port))) {
        fprintf(stderr, "epoch_client: %s\n", gearman_client_error(&client));
        gearman_client_free(&client);
        return 1;
    }
    gearman_task_attr_t attr =
        gearman_task_attr_init_epoch(time(NULL) + delay, GEARMAN_JOB_PRIORITY_NORMAL);
    gearman_argument_t value = gearman_argument_make(NULL, 0, text, strlen(text));
    gearman_task_st *task =
        gearman_execute(&client, "reverse", strlen("reverse"), NULL, 0, &attr, &value, NULL);
    if (task == NULL || gearman_task_return(task) != GEARMAN_SUCCESS) {
        const char *err = gearman_client_error(&client);
        fprintf(stderr, "epoch_client: %s\n", err != NULL ? err : "submit failed");
        gearman_client_free(&client);
        return 1;
    }
    printf("Epoch Job Handle=%s\n", gearman_task_job_handle(task));
    fflush(stdout);
    int status = 1;
    for (long i = 0; i < polls; i++) {
        bool known, running;
        uint32_t num, den;
        gearman_return_t rc = gearman_client_job_status(&client, gearman_task_job_handle(task),
                                                        &known, &running, &num, &den);
        if (gearman_failed(rc)) {
            fprintf(stderr, "epoch_client: %s\n", gearman_client_error(&client));
            break;
        }
        printf("Known=%s Running=%s\n", known ? "true" : "false", running ? "true" : "false");
        fflush(stdout);
        if (!known) {
            status = 0;
            break;
        }
        nap(100);
    }
    gearman_task_free(task);
    gearman_client_free(&client);
    return status;
}
