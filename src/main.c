/* main: spurd's entry point: options, logging, daemonizing, privileges, then the server loop. */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "server.h"

static int write_pid_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "%ld\n", (long)getpid());
    return fclose(f);
}

static int switch_user(const char *user)
{
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
        fprintf(stderr, "spurd: unknown user '%s'\n", user);
        return -1;
    }
    if (getuid() == pw->pw_uid)
        return 0;
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
        fprintf(stderr, "spurd: cannot switch to user '%s': %s\n", user, strerror(errno));
        return -1;
    }
    return 0;
}

static int daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (setsid() < 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (chdir("/") != 0)
        return -1;
    FILE *r = freopen("/dev/null", "r", stdin);
    FILE *w = freopen("/dev/null", "w", stdout);
    (void)r;
    (void)w;
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg;
    char err[512];
    config_defaults(&cfg);

    const char *env_port = getenv("GEARMAND_PORT");
    int rc = config_parse(&cfg, argc, argv, err, sizeof err, stdout);
    if (rc == 1) {
        config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "spurd: %s (see --help)\n", err);
        config_free(&cfg);
        return 1;
    }
    if (cfg.check_args) {
        config_free(&cfg);
        return 0;
    }
    /* like gearmand: $GEARMAND_PORT applies when the port was left at its default */
    if (env_port != NULL && *env_port != '\0' && cfg.port == 4730) {
        char *end;
        long p = strtol(env_port, &end, 10);
        if (*end == '\0' && p >= 0 && p <= 65535)
            cfg.port = (int)p;
    }

    log_set_level((enum log_level)cfg.verbose);
    if (log_open(cfg.log_file) != 0)
        fprintf(stderr, "spurd: cannot open log file '%s'; logging to stderr\n", cfg.log_file);

    signal(SIGPIPE, SIG_IGN);

    if (cfg.file_descriptors > 0) {
        struct rlimit rl = {(rlim_t)cfg.file_descriptors, (rlim_t)cfg.file_descriptors};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            log_error("cannot set --file-descriptors=%ld: %s", cfg.file_descriptors,
                      strerror(errno));
    }

    struct server srv;
    if (server_init(&srv, &cfg, err, sizeof err) != 0) {
        fprintf(stderr, "spurd: %s\n", err);
        log_error("%s", err);
        server_destroy(&srv);
        log_close();
        config_free(&cfg);
        return 1;
    }
    if (cfg.user != NULL && switch_user(cfg.user) != 0) {
        server_destroy(&srv);
        config_free(&cfg);
        return 1;
    }
    if (cfg.daemon && daemonize() != 0) {
        fprintf(stderr, "spurd: cannot daemonize: %s\n", strerror(errno));
        return 1;
    }
    if (cfg.daemon)
        ev_loop_fork(srv.loop);
    if (cfg.pid_file != NULL && write_pid_file(cfg.pid_file) != 0) {
        fprintf(stderr, "spurd: cannot write pid file %s: %s\n", cfg.pid_file, strerror(errno));
        server_destroy(&srv);
        config_free(&cfg);
        return 1;
    }

    int code = server_run(&srv);
    server_destroy(&srv);
    if (cfg.pid_file != NULL)
        unlink(cfg.pid_file);
    log_close();
    config_free(&cfg);
    return code;
}
