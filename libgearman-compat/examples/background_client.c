/* SPDX-License-Identifier: BSD-3-Clause */
/* background_client: submits one "reverse" job in the background, prints its handle, then polls
 * its status until the server no longer knows it (or the poll budget runs out).
 * Written only against libgearman's public API (builds with libgearman-compat and libgearman).
 * Usage: background_client [-h host] [-p port] [-t timeout_ms] [-n polls] [-P high|low] text */
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
    const char *priority = "normal";
    in_port_t port = 4730;
    int timeout = -1;
    long polls = 100;
    int c;
    while ((c = getopt(argc, argv, "h:p:t:n:P:")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 't': timeout = atoi(optarg); break;
        case 'n': polls = atol(optarg); break;
        case 'P': priority = optarg; break;
        default: optind = argc + 1; break;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: %s [-h host] [-p port] [-t ms] [-n polls] [-P high|low] text\n",
                argv[0]);
        return 2;
    }
    const char *text = argv[optind];
    gearman_client_st *client = gearman_client_create(NULL);
    if (client == NULL)
        return 1;
    if (timeout >= 0)
        gearman_client_set_timeout(client, timeout);
    int status = 1;
    gearman_job_handle_t handle;
    gearman_return_t rc = gearman_client_add_server(client, host, port);
    if (gearman_success(rc)) {
        if (strcmp(priority, "high") == 0)
            rc = gearman_client_do_high_background(client, "reverse", NULL, text, strlen(text),
                                                   handle);
        else if (strcmp(priority, "low") == 0)
            rc = gearman_client_do_low_background(client, "reverse", NULL, text, strlen(text),
                                                  handle);
        else
            rc = gearman_client_do_background(client, "reverse", NULL, text, strlen(text), handle);
    }
    if (gearman_failed(rc)) {
        fprintf(stderr, "background_client: %s\n", gearman_client_error(client));
        gearman_client_free(client);
        return 1;
    }
    printf("Background Job Handle=%s\n", handle);
    fflush(stdout);
    for (long i = 0; i < polls; i++) {
        bool known, running;
        uint32_t num, den;
        rc = gearman_client_job_status(client, handle, &known, &running, &num, &den);
        if (gearman_failed(rc)) {
            fprintf(stderr, "background_client: %s\n", gearman_client_error(client));
            break;
        }
        printf("Known=%s Running=%s Numerator=%u Denominator=%u\n", known ? "true" : "false",
               running ? "true" : "false", num, den);
        fflush(stdout);
        if (!known) {
            status = 0;
            break;
        }
        nap(50);
    }
    gearman_client_free(client);
    return status;
}
