/* SPDX-License-Identifier: BSD-3-Clause */
/* main: spurd's entry point: options, logging, daemonizing, privileges, then the server loop. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acl.h"
#include "config.h"
#include "dump_offline.h"
#include "file.h"
#include "log.h"
#include "options.h"
#include "server.h"
#include "store.h"
#include "store_backend.h"
#include "store_sqlite.h"

/* status_fd is, in a daemon that has not reported yet, the pipe to the waiting parent. */
static int status_fd = -1;
/* failed_fd keeps that pipe open after an error, so the parent returns only once this process
 * has exited (its listeners closed). */
static int failed_fd = -1;

/* start_failed reports a start-up error: logged, and printed on the terminal (through the
 * waiting parent when daemonized) once: when the log is stderr itself, the log line is left
 * out there (syslog still gets it), so the terminal does not show the error twice. */
static void start_failed(const char *msg)
{
    int on_stderr = status_fd < 0 && log_on_stderr();
    if (on_stderr)
        log_set_quiet(1);
    log_error("%s", msg);
    if (on_stderr)
        log_set_quiet(0);
    if (status_fd < 0) {
        fprintf(stderr, "spurd: %s\n", msg);
        return;
    }
    char buf[1024];
    int n = snprintf(buf, sizeof buf, "1%s", msg);
    if (n > (int)sizeof buf - 1)
        n = (int)sizeof buf - 1;
    ssize_t w = write(status_fd, buf, (size_t)n);
    (void)w;
    failed_fd = status_fd;
    status_fd = -1;
}

static int switch_user(const char *user, char *err, size_t errlen)
{
    struct passwd *pw = getpwnam(user);
    if (pw == NULL) {
        snprintf(err, errlen, "unknown user '%s'", user);
        return -1;
    }
    if (getuid() == pw->pw_uid)
        return 0;
    if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) {
        snprintf(err, errlen, "cannot switch to user '%s': %s", user, strerror(errno));
        return -1;
    }
    return 0;
}

/* wait_for_daemon runs in the original process: it waits until the daemon reports ready ("0")
 * or an error ("1" and the message), or exits without a word. Returns the exit code. */
static int wait_for_daemon(int fd, pid_t first)
{
    char buf[1100];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        ssize_t r = read(fd, buf + len, sizeof buf - 1 - len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
    waitpid(first, NULL, 0);
    if (len > 0 && buf[0] == '0')
        return 0;
    if (len > 1)
        fprintf(stderr, "spurd: %s\n", buf + 1);
    else
        fprintf(stderr, "spurd: the daemon exited during start-up\n");
    return 1;
}

/* daemon_begin detaches (fork, setsid, fork, chdir "/"); only the daemon returns, 0 or -1.
 * The original process waits for daemon_ready or start_failed and exits with 0 or 1. */
static int daemon_begin(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0) {
        close(p[1]);
        int code = wait_for_daemon(p[0], pid);
        fflush(NULL);
        _exit(code); /* the daemon owns the server now: no clean-up here */
    }
    close(p[0]);
    status_fd = p[1];
    if (setsid() < 0)
        return -1;
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (chdir("/") != 0)
        return -1;
    return 0;
}

/* daemon_ready tells the waiting parent that start-up succeeded and lets go of the terminal. */
static void daemon_ready(void)
{
    ssize_t w = write(status_fd, "0", 1);
    (void)w;
    close(status_fd);
    status_fd = -1;
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        dup2(nul, 0);
        dup2(nul, 1);
        dup2(nul, 2);
        if (nul > 2)
            close(nul);
    }
}

/* remove_pid_file unlinks path if it still holds our pid (a successor may have replaced it). */
static void remove_pid_file(const char *path)
{
    char buf[32];
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = '\0';
    if (strtol(buf, NULL, 10) == (long)getpid())
        unlink(path);
}

/* check_store_dir fails --check-args when an SQLite store's file would go in a directory that
 * does not exist (SQLite creates the file, never its directory). Returns 0, or -1 with err. */
static int check_store_dir(const struct config *c, char *err, size_t errlen)
{
    struct store_params p;
    if (store_backend_choose(c, &p) != &store_sqlite_backend || p.location == NULL ||
        p.location[0] == '\0')
        return 0;
    char dir[4096];
    if (file_dirname(p.location, dir, sizeof dir) != 0)
        return 0; /* too long to check here: the open says what is wrong */
    struct stat st;
    int bad = stat(dir, &st) != 0 ? errno : 0;
    if (bad != 0 || !S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "store %.200s: directory '%.200s': %s (create it first)", p.location, dir,
                 bad != 0 ? strerror(bad) : "not a directory");
        return -1;
    }
    return 0;
}

/* check_only runs --check-policy or --check-args, which check and exit. Returns the exit code,
 * or -1 when neither was asked for. */
static int check_only(struct config *cfg)
{
    char err[512];
    if (cfg->check_policy != NULL) {
        struct acl_policy *pol = acl_policy_load(cfg->check_policy, err, sizeof err);
        if (pol != NULL)
            printf("%s: OK (%zu rules)\n", cfg->check_policy, pol->nrules);
        else
            fprintf(stderr, "spurd: %s\n", err);
        int bad = pol == NULL;
        acl_policy_free(pol);
        return bad;
    }
    if (!cfg->check_args)
        return -1;
    /* the --admin-allow rules; the policy file is server_init's (or --check-policy's) */
    char *policy = cfg->policy;
    struct acl *acl_check = NULL;
    cfg->policy = NULL;
    int rc = acl_new(cfg, &acl_check, err, sizeof err);
    cfg->policy = policy;
    acl_free(acl_check);
    if (rc == 0)
        rc = check_store_dir(cfg, err, sizeof err);
    if (rc != 0) {
        fprintf(stderr, "spurd: %s\n", err);
        return 1;
    }
    return 0;
}

/* apply_env_port applies $GEARMAND_PORT (env_port, read before the options) like gearmand: when
 * the port was left at its default. */
static void apply_env_port(struct config *cfg, const char *env_port)
{
    if (env_port != NULL && *env_port != '\0' && cfg->port == 4730) {
        char *end;
        long p = strtol(env_port, &end, 10);
        if (*end == '\0' && p >= 0 && p <= 65535)
            cfg->port = (int)p;
    }
}

/* run_offline dumps or loads a stopped store (--dump, --load), with no listener. Returns the
 * exit code. */
static int run_offline(const struct config *cfg)
{
    if (cfg->dump_file != NULL && cfg->load_file != NULL) {
        fprintf(stderr, "spurd: --dump and --load cannot be given together\n");
        return 1;
    }
    log_set_level(LOG_WARNING);
    int rc = cfg->dump_file != NULL ? dump_offline_dump(cfg, cfg->dump_file)
                                    : dump_offline_load(cfg, cfg->load_file);
    return rc == 0 ? 0 : 1;
}

/* start_logging makes a daemon's relative paths absolute and opens the log (stderr, a file,
 * syslog). Returns 0, or -1 with the reason printed on stderr. */
static int start_logging(struct config *cfg)
{
    /* a daemon runs in "/": relative paths name files in the directory it was started from */
    if (cfg->daemon) {
        char cwd[4096];
        if (getcwd(cwd, sizeof cwd) == NULL || config_make_absolute(cfg, cwd) != 0) {
            fprintf(stderr, "spurd: cannot resolve relative paths: %s\n", strerror(errno));
            return -1;
        }
    }
    int log_to_stderr = cfg->log_file == NULL || strcmp(cfg->log_file, "stderr") == 0;
    log_set_level((enum log_level)cfg->verbose);
    if (cfg->syslog || (cfg->daemon && log_to_stderr))
        log_set_syslog(1);
    if (cfg->daemon && log_to_stderr)
        log_set_quiet(1); /* syslog has the lines; start-up errors are still printed */
    if (log_open(cfg->log_file) != 0) {
        if (cfg->daemon) {
            fprintf(stderr, "spurd: cannot open log file '%s': %s\n", cfg->log_file,
                    strerror(errno));
            log_set_syslog(0);
            return -1;
        }
        fprintf(stderr, "spurd: cannot open log file '%s': %s; logging to stderr\n",
                cfg->log_file, strerror(errno));
    }
    return 0;
}

/* start_server binds (server_init), daemonizes, opens the store (server_start), writes the pid
 * and port files and switches user. Returns 0, or -1 once start_failed has reported why; srv
 * needs server_destroy either way. */
static int start_server(struct config *cfg, struct server *srv)
{
    char err[512];
    /* bind first, start threads (the store's committer) only after the daemon forked: a fork
     * keeps the calling thread only, and any lock another thread held stays held forever */
    if (server_init(srv, cfg, err, sizeof err) != 0)
        goto failed;
    if (cfg->daemon) {
        if (daemon_begin() != 0) {
            snprintf(err, sizeof err, "cannot daemonize: %s", strerror(errno));
            goto failed;
        }
        ev_loop_fork(srv->loop);
    }
    if (server_start(srv, err, sizeof err) != 0)
        goto failed;
    if (cfg->pid_file != NULL) {
        char text[32];
        snprintf(text, sizeof text, "%ld\n", (long)getpid());
        if (file_write_atomic(cfg->pid_file, text) != 0) {
            snprintf(err, sizeof err, "cannot write pid file %s: %s", cfg->pid_file,
                     strerror(errno));
            goto failed;
        }
    }
    /* the port file last: whoever waits for it may then rely on the pid file and the store */
    if (server_write_port_file(srv, err, sizeof err) != 0 ||
        (cfg->user != NULL && switch_user(cfg->user, err, sizeof err) != 0)) {
        start_failed(err);
        if (cfg->pid_file != NULL)
            remove_pid_file(cfg->pid_file);
        return -1;
    }
    if (cfg->daemon)
        daemon_ready();
    return 0;
failed:
    start_failed(err);
    return -1;
}

int main(int argc, char **argv)
{
    struct config cfg;
    char err[512];
    options_defaults(&cfg);

    const char *env_port = getenv("GEARMAND_PORT");
    int rc = options_parse(&cfg, argc, argv, err, sizeof err, stdout);
    if (rc == 1) {
        config_free(&cfg);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "spurd: %s (see --help)\n", err);
        config_free(&cfg);
        return 1;
    }
    rc = check_only(&cfg);
    if (rc < 0) {
        apply_env_port(&cfg, env_port);
        if (cfg.dump_file != NULL || cfg.load_file != NULL) /* a stopped store */
            rc = run_offline(&cfg);
        else if (start_logging(&cfg) != 0)
            rc = 1;
    }
    if (rc >= 0) {
        config_free(&cfg);
        return rc;
    }

    signal(SIGPIPE, SIG_IGN);

    if (cfg.file_descriptors > 0) {
        struct rlimit rl = {(rlim_t)cfg.file_descriptors, (rlim_t)cfg.file_descriptors};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            log_error("cannot set --file-descriptors=%ld: %s", cfg.file_descriptors,
                      strerror(errno));
    }

    struct server srv;
    int code = 1;
    if (start_server(&cfg, &srv) == 0) {
        code = server_run(&srv);
        log_notice("spurd stopped (exit code %d)", code);
        if (cfg.pid_file != NULL)
            remove_pid_file(cfg.pid_file);
    }
    server_destroy(&srv);
    if (store_stuck()) {
        /* the store's thread is still in its database or disk call: exit without the exit
         * handlers its libraries may still need (store_close logged what is not written) */
        code = code == 0 ? 1 : code;
        log_notice("spurd stopped without waiting for the store (exit code %d)", code);
        log_set_syslog(0);
        log_close();
        fflush(NULL);
        _exit(code);
    }
    log_set_syslog(0);
    log_close();
    config_free(&cfg);
    (void)failed_fd; /* closed by the exit */
    return code;
}
