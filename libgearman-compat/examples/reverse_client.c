/* SPDX-License-Identifier: BSD-3-Clause */
/* reverse_client: submits one "reverse" job and prints the result.
 * Written only against libgearman's public API (builds with libgearman-compat and libgearman).
 * Usage: reverse_client [-h host] [-p port] [-t timeout_ms] [-f function] [-u unique] text */
#include <libgearman/gearman.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *host = "localhost";
    const char *function = "reverse";
    const char *unique = NULL;
    in_port_t port = 4730;
    int timeout = -1;
    int c;
    while ((c = getopt(argc, argv, "h:p:t:f:u:")) != -1) {
        switch (c) {
        case 'h': host = optarg; break;
        case 'p': port = (in_port_t)atoi(optarg); break;
        case 't': timeout = atoi(optarg); break;
        case 'f': function = optarg; break;
        case 'u': unique = optarg; break;
        default: optind = argc + 1; break;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "usage: %s [-h host] [-p port] [-t ms] [-f function] [-u unique] text\n",
                argv[0]);
        return 2;
    }
    const char *text = argv[optind];
    gearman_client_st client;
    if (gearman_client_create(&client) == NULL) {
        fprintf(stderr, "reverse_client: out of memory\n");
        return 1;
    }
    int status = 0;
    if (timeout >= 0)
        gearman_client_set_timeout(&client, timeout);
    if (gearman_failed(gearman_client_add_server(&client, host, port))) {
        fprintf(stderr, "reverse_client: %s\n", gearman_client_error(&client));
        status = 1;
    } else {
        size_t size = 0;
        gearman_return_t rc;
        char *result = gearman_client_do(&client, function, unique, text, strlen(text), &size, &rc);
        if (rc == GEARMAN_SUCCESS) {
            printf("Result=%.*s\n", (int)size, result != NULL ? result : "");
        } else if (rc == GEARMAN_WORK_FAIL) {
            fprintf(stderr, "reverse_client: the job failed\n");
            status = 1;
        } else {
            fprintf(stderr, "reverse_client: %s: %s\n", gearman_strerror(rc),
                    gearman_client_error(&client) ? gearman_client_error(&client) : "");
            status = 1;
        }
        free(result);
    }
    gearman_client_free(&client);
    return status;
}
