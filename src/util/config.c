/* SPDX-License-Identifier: BSD-3-Clause */
/* config: spurd's settings, their defaults, the server's option rows (opt.h) and the
 * command-line / config-file parser. Pure. */
#include "spur_config.h"
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "file.h"
#include "log.h"
#include "opt.h"
#include "schedule.h"

#define F(field) offsetof(struct config, field)
#define CFG(x) ((struct config *)(x)->cfg)

size_t config_default_buffer_memory(void)
{
    const size_t floor = (size_t)256 << 20;
    long pages = sysconf(_SC_PHYS_PAGES);
    long page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return floor;
    unsigned long long quarter = (unsigned long long)pages * (unsigned long long)page / 4;
    if (quarter > SIZE_MAX)
        quarter = SIZE_MAX;
    return quarter > floor ? (size_t)quarter : floor;
}

/* buffer_memory_min is the smallest --max-buffer-memory that still lets one connection receive
 * a packet of the largest size (its input buffer can be twice the packet while it grows). */
static size_t buffer_memory_min(const struct config *c)
{
    return 2 * (size_t)c->max_packet + (64u << 10);
}

/* errf formats an error message into err. */
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

int config_parse_retry_numbers(const char *count, const char *backoff, const char *max,
                               uint32_t *n, double *b, double *m)
{
    long v;
    if (opt_parse_long(count, 0, 1000, &v) != 0 || opt_parse_seconds(backoff, b) != 0 ||
        opt_parse_seconds(max, m) != 0 || *b > 2592000.0 || *m > 2592000.0 || *b > *m)
        return -1;
    *n = (uint32_t)v;
    return 0;
}

/* word_add appends the n bytes at w as a new word to *words. Returns 0, or -1 out of memory. */
static int word_add(char ***words, int *nwords, const char *w, size_t n)
{
    char **nw = realloc(*words, sizeof **words * (size_t)(*nwords + 1));
    if (nw == NULL)
        return -1;
    *words = nw;
    char *copy = malloc(n + 1);
    if (copy == NULL)
        return -1;
    memcpy(copy, w, n);
    copy[n] = '\0';
    nw[(*nwords)++] = copy;
    return 0;
}

int config_split_line(const char *line, char ***words, int *nwords, char *err, size_t errlen)
{
    size_t len = strlen(line);
    char *w = malloc(len + 1); /* a word is never longer than its line */
    if (w == NULL)
        return errf(err, errlen, "out of memory");
    size_t wl = 0;
    int inword = 0;           /* a word has begun (it may still be empty: "") */
    char quote = 0;           /* the open quote, or 0 */
    int rc = 0;
    for (const char *p = line;; p++) {
        char ch = *p;
        if (quote != 0) {
            if (ch == '\0') {
                rc = errf(err, errlen, "unterminated %s quote",
                          quote == '"' ? "double" : "single");
                break;
            }
            if (ch == quote) {
                quote = 0;
            } else if (quote == '"' && ch == '\\' && (p[1] == '"' || p[1] == '\\')) {
                w[wl++] = *++p;
            } else {
                w[wl++] = ch;
            }
            continue;
        }
        if (ch == '\0' || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' ||
            (ch == '#' && !inword)) {
            if (inword && word_add(words, nwords, w, wl) != 0) {
                rc = errf(err, errlen, "out of memory");
                break;
            }
            inword = 0;
            wl = 0;
            if (ch == '\0' || ch == '#') /* '#' starting a word: a comment to the end */
                break;
            continue;
        }
        inword = 1;
        if (ch == '"' || ch == '\'') {
            quote = ch;
        } else if (ch == '\\') {
            if (p[1] == '\0' || p[1] == '\n' || p[1] == '\r') {
                rc = errf(err, errlen, "backslash at the end of the line");
                break;
            }
            w[wl++] = *++p;
        } else {
            w[wl++] = ch;
        }
    }
    free(w);
    return rc;
}

/* struct cfiles lists the config files named on the command line, in order (borrowed). */
struct cfiles {
    const char **name; /* the paths, pointing into argv */
    int n;             /* entries in name */
};

/* add_cfile appends path to files. Returns 0, or -1 out of memory. */
static int add_cfile(struct cfiles *files, const char *path)
{
    const char **nn = realloc(files->name, sizeof *nn * (size_t)(files->n + 1));
    if (nn == NULL)
        return -1;
    files->name = nn;
    nn[files->n++] = path;
    return 0;
}

/* free_words frees n words and the array. */
static void free_words(char **words, int n)
{
    for (int i = 0; i < n; i++)
        free(words[i]);
    free(words);
}

/* The sections of a config file: options (from the start, or after "[options]"), and after
 * "[schedule]" one schedule per line (the text of an admin `schedule add`). */
enum { SECTION_OPTIONS = 0, SECTION_SCHEDULE };

/* trim returns line[0..*len) without surrounding blanks and its line ending. */
static const char *trim(const char *line, size_t *len)
{
    size_t n = *len;
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t'))
        n--;
    while (n > 0 && (*line == ' ' || *line == '\t')) {
        line++;
        n--;
    }
    *len = n;
    return line;
}

/* section_line reports whether line is a section header: 1 (and *section set) if it is, 0 if
 * not, -1 for an unknown section. */
static int section_line(const char *line, size_t len, int *section)
{
    const char *t = trim(line, &len);
    if (len < 2 || t[0] != '[' || t[len - 1] != ']')
        return 0;
    if (len == 9 && memcmp(t, "[options]", 9) == 0)
        *section = SECTION_OPTIONS;
    else if (len == 10 && memcmp(t, "[schedule]", 10) == 0)
        *section = SECTION_SCHEDULE;
    else
        return -1;
    return 1;
}

/* add_schedule_line appends one [schedule] line to c->schedules after checking it (blank lines
 * and '#' comments are skipped). Returns 0, or -1 with a message in err. */
static int add_schedule_line(struct config *c, const char *line, size_t len, char *err,
                             size_t errlen)
{
    const char *t = trim(line, &len);
    if (len == 0 || t[0] == '#')
        return 0;
    struct schedule s;
    if (schedule_parse(t, len, &s, err, errlen) != 0)
        return -1;
    schedule_free(&s);
    char **ns = realloc(c->schedules, sizeof *ns * ((size_t)c->nschedules + 1));
    if (ns == NULL)
        return errf(err, errlen, "out of memory");
    c->schedules = ns;
    ns[c->nschedules] = malloc(len + 1);
    if (ns[c->nschedules] == NULL)
        return errf(err, errlen, "out of memory");
    memcpy(ns[c->nschedules], t, len);
    ns[c->nschedules++][len] = '\0';
    return 0;
}

/* apply_file reads the config file at path line by line and applies each line's options to c.
 * Errors are "PATH:LINE: message", or "cannot read config file PATH: reason". Returns 0 or -1. */
static int apply(struct config *c, const struct opt_table *const *tables, int argc, char **argv,
                 char *err, size_t errlen, FILE *out, struct cfiles *files, int in_file);

static int apply_file(struct config *c, const struct opt_table *const *tables, const char *path,
                      char *err, size_t errlen, FILE *out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return errf(err, errlen, "cannot read config file %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int lineno = 0;
    int rc = 0;
    int section = SECTION_OPTIONS;
    char why[400];
    errno = 0;
    while ((n = getline(&line, &cap, f)) != -1) {
        lineno++;
        if ((size_t)n > CONFIG_MAX_FILE_LINE) {
            rc = errf(err, errlen, "%s:%d: line longer than %d bytes", path, lineno,
                      CONFIG_MAX_FILE_LINE);
            break;
        }
        if (memchr(line, '\0', (size_t)n) != NULL) {
            rc = errf(err, errlen, "%s:%d: NUL byte in the line", path, lineno);
            break;
        }
        int sec = section_line(line, (size_t)n, &section);
        if (sec < 0) {
            rc = errf(err, errlen, "%s:%d: unknown section (known: [options], [schedule])", path,
                      lineno);
            break;
        }
        if (sec > 0)
            continue;
        if (section == SECTION_SCHEDULE) {
            if (add_schedule_line(c, line, (size_t)n, why, sizeof why) != 0) {
                rc = errf(err, errlen, "%s:%d: %s", path, lineno, why);
                break;
            }
            continue;
        }
        char **words = NULL;
        int nwords = 0;
        if (config_split_line(line, &words, &nwords, why, sizeof why) != 0) {
            free_words(words, nwords);
            rc = errf(err, errlen, "%s:%d: %s", path, lineno, why);
            break;
        }
        if (nwords > 0) {
            char **argv = calloc((size_t)nwords + 2, sizeof *argv);
            if (argv == NULL) {
                free_words(words, nwords);
                rc = errf(err, errlen, "out of memory");
                break;
            }
            argv[0] = (char *)"spurd";
            memcpy(argv + 1, words, sizeof *words * (size_t)nwords);
            int r = apply(c, tables, nwords + 1, argv, why, sizeof why, out, NULL, 1);
            free(argv);
            free_words(words, nwords);
            if (r != 0) {
                rc = r < 0 ? errf(err, errlen, "%s:%d: %s", path, lineno, why) : r;
                break;
            }
        }
        errno = 0;
    }
    if (rc == 0 && ferror(f))
        rc = errf(err, errlen, "cannot read config file %s: %s", path,
                  strerror(errno != 0 ? errno : EIO));
    free(line);
    fclose(f);
    return rc;
}

/* ------------------------------------------------------------------ options with real logic */

/* set_help prints --help and stops the parse. */
static int set_help(struct opt_ctx *x, const char *arg)
{
    (void)arg;
    opt_usage(x->tables, x->headers, x->out);
    return 1;
}

/* set_version prints --version and stops the parse. */
static int set_version(struct opt_ctx *x, const char *arg)
{
    (void)arg;
    fprintf(x->out, "spurd %s\n", PACKAGE_VERSION);
    return 1;
}

/* set_config_file collects --config-file=FILE (read before the command line). */
static int set_config_file(struct opt_ctx *x, const char *arg)
{
    if (x->in_file)
        return opt_errf(x, "--config-file cannot be used in a config file");
    if (x->user != NULL && add_cfile(x->user, arg) != 0)
        return opt_errf(x, "out of memory");
    return 0;
}

/* config_word handles a word that is not an option: @FILE on the command line names a config
 * file; anything else is an error. */
static int config_word(struct opt_ctx *x, const char *w)
{
    if (w[0] == '@' && w[1] != '\0' && !x->in_file) {
        if (x->user != NULL && add_cfile(x->user, w + 1) != 0)
            return opt_errf(x, "out of memory");
        return 0;
    }
    if (x->in_file && w[0] != '-' && strchr(w, '=') != NULL)
        return opt_errf(x, "unexpected word '%s' (write --%s)", w, w);
    return opt_errf(x, "unexpected argument '%s'", w);
}

/* set_handle_prefix sets --job-handle-prefix (1 to 40 bytes). */
static int set_handle_prefix(struct opt_ctx *x, const char *arg)
{
    if (arg[0] == '\0' || strlen(arg) > 40)
        return opt_errf(x, "--job-handle-prefix must be 1 to 40 bytes");
    opt_set_str(&CFG(x)->job_handle_prefix, arg);
    return 0;
}

/* set_queue_type sets gearmand's -q TYPE (any case). */
static int set_queue_type(struct opt_ctx *x, const char *arg)
{
    if (strcasecmp(arg, "builtin") != 0 && strcasecmp(arg, "libsqlite3") != 0 &&
        strcasecmp(arg, "Postgres") != 0)
        return opt_errf(x, "unsupported --queue-type '%s' (builtin, libsqlite3 or Postgres)", arg);
    opt_set_str(&CFG(x)->queue_type, arg);
    return 0;
}

/* set_verbose sets --verbose=LEVEL (log_level_parse's names). */
static int set_verbose(struct opt_ctx *x, const char *arg)
{
    int lvl = log_level_parse(arg);
    if (lvl < 0)
        return opt_errf(x, "invalid --verbose level '%s'", arg);
    CFG(x)->verbose = lvl;
    return 0;
}

/* set_store sets --store=sqlite:PATH or postgres:CONNINFO. */
static int set_store(struct opt_ctx *x, const char *arg)
{
    if ((strncmp(arg, "sqlite:", 7) != 0 || arg[7] == '\0') && strncmp(arg, "postgres:", 9) != 0)
        return opt_errf(x, "invalid --store '%s' (sqlite:PATH or postgres:CONNINFO)", arg);
    opt_set_str(&CFG(x)->store, arg);
    return 0;
}

/* set_dump_load sets --dump or --load: actions of the command line (a server's config file
 * must not turn every start into a dump or load). */
static int set_dump_load(struct opt_ctx *x, const char *arg, const char *name, char **dst)
{
    if (x->in_file)
        return opt_errf(x, "--%s cannot be used in a config file", name);
    opt_set_str(dst, arg);
    return 0;
}

/* set_dump sets --dump=FILE. */
static int set_dump(struct opt_ctx *x, const char *arg)
{
    return set_dump_load(x, arg, "dump", &CFG(x)->dump_file);
}

/* set_load sets --load=FILE. */
static int set_load(struct opt_ctx *x, const char *arg)
{
    return set_dump_load(x, arg, "load", &CFG(x)->load_file);
}

/* ------------------------------------------------------------------ the server's option rows */

static const struct opt_choice sync_choices[] = {{"full", 0}, {"normal", 1}, {NULL, 0}};
static const struct opt_choice cando_choices[] = {{"fail", 0}, {"requeue", 1}, {NULL, 0}};
static const struct opt_choice shutdown_choices[] = {
    {"local", SHUTDOWN_LOCAL},
    {"any", SHUTDOWN_ANY},
    {"none", SHUTDOWN_NONE},
    {NULL, 0},
};
static const struct opt_choice read_choices[] = {{"all", 0}, {"allowed", 1}, {NULL, 0}};

#define KA_ERR "invalid keepalive value '%s' (-1 or 1..32767)"

/* The rows of the server's own options (listeners, process, engine, limits, admin, the store
 * manager); TLS, HTTP, the features and the store backends own theirs (config.h). */
static const struct opt config_rows[] = {
    {.name = "backlog", .short_name = 'b', .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(backlog), .lo = 1, .hi = INT_MAX,
     .err = "invalid --backlog value '%s'",
     .help = "listen() backlog (default: the kernel's maximum,\n"
              "net.core.somaxconn; gearmand's is 32)",
     .section = CONFIG_HELP_GEARMAND, .rank = 10},
    {.name = "daemon", .short_name = 'd',
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(daemon),
     .help = "detach and run in the background; start-up errors are\n"
              "printed and exit 1; without -l, logs go to syslog",
     .section = CONFIG_HELP_GEARMAND, .rank = 20},
    {.name = "exceptions",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(exceptions),
     .help = "enable WORK_EXCEPTION forwarding for every client",
     .section = CONFIG_HELP_GEARMAND, .rank = 30},
    {.name = "file-descriptors", .short_name = 'f', .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_LONG, .off = F(file_descriptors), .lo = 0, .hi = LONG_MAX,
     .err = "invalid --file-descriptors value '%s'",
     .help = "set the open-file limit (RLIMIT_NOFILE)",
     .section = CONFIG_HELP_GEARMAND, .rank = 40},
    {.name = "help", .short_name = 'h',
     .parse = OPT_P_CUSTOM, .set = set_help,
     .help = "print this help and exit",
     .section = CONFIG_HELP_GEARMAND, .rank = 50},
    {.name = "job-retries", .short_name = 'j', .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(job_retries), .lo = -1, .hi = 255, .def = -1,
     .err = "invalid --job-retries value '%s' (-1..255)",
     .help = "attempts after which a job whose worker is lost fails:\n"
              "-1 unlimited (default), 0 or 1 never retried, N handed\n"
              "out at most N times (fails on the N-th loss, as gearmand)",
     .section = CONFIG_HELP_GEARMAND, .rank = 60},
    {.name = "job-handle-prefix", .arg = "P",
     .parse = OPT_P_CUSTOM, .set = set_handle_prefix, .has_arg = 1,
     .help = "job handles are P:N (default H:<hostname>)",
     .section = CONFIG_HELP_GEARMAND, .rank = 70},
    {.name = "hashtable-buckets", .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_NONE, .lo = 1, .hi = LONG_MAX,
     .err = "invalid --hashtable-buckets value '%s'",
     .help = "accepted and ignored: spurd's tables resize themselves",
     .section = CONFIG_HELP_GEARMAND, .rank = 80},
    {.name = "keepalive",
     .parse = OPT_P_FLAG, .field = OPT_F_NONE,
     .help = "accepted: accepted sockets always get SO_KEEPALIVE",
     .section = CONFIG_HELP_GEARMAND, .rank = 90},
    {.name = "keepalive-idle", .arg = "S",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(keepalive_idle), .lo = -1, .hi = 32767,
     .def = -1, .flags = OPT_NOT_ZERO, .err = KA_ERR,
     .help = "TCP_KEEPIDLE for accepted sockets (default: OS)",
     .section = CONFIG_HELP_GEARMAND, .rank = 100},
    {.name = "keepalive-interval", .arg = "S",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(keepalive_interval), .lo = -1, .hi = 32767,
     .def = -1, .flags = OPT_NOT_ZERO, .err = KA_ERR,
     .help = "TCP_KEEPINTVL for accepted sockets (default: OS)",
     .section = CONFIG_HELP_GEARMAND, .rank = 110},
    {.name = "keepalive-count", .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(keepalive_count), .lo = -1, .hi = 32767,
     .def = -1, .flags = OPT_NOT_ZERO, .err = KA_ERR,
     .help = "TCP_KEEPCNT for accepted sockets (default: OS)",
     .section = CONFIG_HELP_GEARMAND, .rank = 120},
    {.name = "log-file", .short_name = 'l', .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(log_file),
     .help = "log to FILE, 'stderr' (default) or 'none'",
     .section = CONFIG_HELP_GEARMAND, .rank = 130},
    {.name = "listen", .short_name = 'L', .arg = "ADDR",
     .parse = OPT_P_LIST, .field = OPT_F_NONE, .off = F(listen), .count_off = F(nlisten),
     .hi = CONFIG_MAX_LISTEN, .err = "too many --listen addresses (at most %d)",
     .help = "address to listen on (repeatable; default all)",
     .section = CONFIG_HELP_GEARMAND, .rank = 140},
    {.name = "port", .short_name = 'p', .arg = "PORT",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(port), .lo = 0, .hi = 65535, .def = 4730,
     .err = "invalid --port value '%s'",
     .help = "TCP port (default 4730, or $GEARMAND_PORT; 0 = any free)",
     .section = CONFIG_HELP_GEARMAND, .rank = 150},
    {.name = "pid-file", .short_name = 'P', .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(pid_file),
     .help = "write the process id to FILE",
     .section = CONFIG_HELP_GEARMAND, .rank = 160},
    {.name = "queue-type", .short_name = 'q', .arg = "TYPE",
     .parse = OPT_P_CUSTOM, .set = set_queue_type, .has_arg = 1,
     .help = "builtin (memory), libsqlite3 or Postgres (durable)",
     .section = CONFIG_HELP_GEARMAND, .rank = 170},
    {.name = "store-queue-on-shutdown",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(store_on_shutdown),
     .help = "accepted; the store always writes as it goes",
     .section = CONFIG_HELP_GEARMAND, .rank = 220},
    {.name = "round-robin", .short_name = 'R',
     .parse = OPT_P_FLAG, .field = OPT_F_NONE,
     .help = "accepted: round-robin across functions is always on",
     .section = CONFIG_HELP_GEARMAND, .rank = 290},
    {.name = "config-file", .arg = "FILE",
     .parse = OPT_P_CUSTOM, .set = set_config_file, .has_arg = 1,
     .help = "read options from FILE first (also @FILE; repeatable): as on\n"
              "the command line, # comments, '' and \"\" quoting",
     .section = CONFIG_HELP_GEARMAND, .rank = 300},
    {.name = "syslog",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(syslog),
     .help = "also log to syslog(3) (facility daemon)",
     .section = CONFIG_HELP_GEARMAND, .rank = 310},
    {.name = "coredump",
     .parse = OPT_P_FLAG, .field = OPT_F_NONE,
     .help = "accepted and ignored",
     .section = CONFIG_HELP_GEARMAND, .rank = 320},
    {.name = "threads", .short_name = 't', .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(threads), .lo = 0, .hi = 1024,
     .err = "invalid --threads value '%s'",
     .help = "accepted: spurd runs one event loop on one thread",
     .section = CONFIG_HELP_GEARMAND, .rank = 330},
    {.name = "user", .short_name = 'u', .arg = "USER",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(user),
     .help = "switch to USER after binding",
     .section = CONFIG_HELP_GEARMAND, .rank = 340},
    {.name = "verbose", .arg = "LEVEL",
     .parse = OPT_P_CUSTOM, .set = set_verbose, .has_arg = 1,
     .help = "FATAL ALERT CRITICAL ERROR (default) WARNING NOTICE INFO DEBUG",
     .section = CONFIG_HELP_GEARMAND, .rank = 350},
    {.name = "version", .short_name = 'V',
     .parse = OPT_P_CUSTOM, .set = set_version,
     .help = "print the version and exit",
     .section = CONFIG_HELP_GEARMAND, .rank = 360},
    {.name = "worker-wakeup", .short_name = 'w', .arg = "N",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(worker_wakeup), .lo = 0, .hi = 65535,
     .def = -1, .err = "invalid --worker-wakeup value '%s'",
     .help = "sleeping workers woken per new job: N, or 0 for all, as\n"
              "gearmand; unset (default): one per job that needs a worker",
     .section = CONFIG_HELP_GEARMAND, .rank = 370},
    {.name = "check-args",
     .parse = OPT_P_FLAG, .field = OPT_F_INT, .off = F(check_args),
     .help = "check the options (and that the store's directory exists) and exit",
     .section = CONFIG_HELP_GEARMAND, .rank = 380},
    {.name = "unix", .arg = "PATH",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(unix_path),
     .help = "also listen on a unix-domain socket",
     .section = CONFIG_HELP_SPUR, .rank = 10},
    {.name = "port-file", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(port_file),
     .help = "write the bound TCP port to FILE (useful with --port=0)",
     .section = CONFIG_HELP_SPUR, .rank = 20},
    {.name = "listen-retry", .arg = "S",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(listen_retry), .lo = 0, .hi = 86400,
     .err = "invalid --listen-retry '%s' (seconds, 0..86400)",
     .help = "retry a busy port once a second for up to S seconds\n"
              "(default 0: fail at once)",
     .section = CONFIG_HELP_SPUR, .rank = 60},
    {.name = "tcp-user-timeout", .arg = "S",
     .parse = OPT_P_LONG, .field = OPT_F_INT, .off = F(tcp_user_timeout), .lo = 0, .hi = 4000000,
     .def = -1, .err = "invalid --tcp-user-timeout '%s' (seconds, 0..4000000)",
     .help = "TCP_USER_TIMEOUT for accepted sockets: unacknowledged data\n"
              "older than S seconds closes the connection (0 = OS\n"
              "default; default: derived from --keepalive-*)",
     .section = CONFIG_HELP_SPUR, .rank = 70},
    {.name = "store", .arg = "sqlite:PATH",
     .parse = OPT_P_CUSTOM, .set = set_store, .has_arg = 1,
     .help = "keep background jobs in a durable SQLite store",
     .section = CONFIG_HELP_SPUR, .rank = 160},
    {.name = "store-sync", .arg = "MODE",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(store_sync_normal), .choices = sync_choices,
     .err = "invalid --store-sync '%s' (full or normal)",
     .help = "full (default): every batch is fsync'd before its replies;\n"
              "normal: no fsync, safe against kill -9 but not power loss",
     .section = CONFIG_HELP_SPUR, .rank = 180},
    {.name = "store-wait", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(store_wait), .dmax = 3600,
     .err = "invalid --store-wait '%s' (0 to 3600 seconds)",
     .help = "postgres: a background submit waits up to S seconds for an\n"
              "unavailable database (default 0: QUEUE_ERROR at once)",
     .section = CONFIG_HELP_SPUR, .rank = 200},
    {.name = "store-timeout", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(store_timeout), .dmin = 0.1,
     .dmax = 3600, .def = STORE_TIMEOUT_DEFAULT,
     .err = "invalid --store-timeout '%s' (0.1 to 3600 seconds)",
     .help = "a batch not written within S seconds (after --store-wait) is\n"
              "given up: its submits get QUEUE_ERROR; a stop waits at most\n"
              "S seconds for the store (default 10; a hung database)",
     .section = CONFIG_HELP_SPUR, .rank = 210},
    {.name = "dump", .arg = "FILE",
     .parse = OPT_P_CUSTOM, .set = set_dump, .has_arg = 1,
     .help = "write the jobs of the store (--store, stopped server) to\n"
              "FILE as dump lines (- = stdout) and exit",
     .section = CONFIG_HELP_SPUR, .rank = 260},
    {.name = "load", .arg = "FILE",
     .parse = OPT_P_CUSTOM, .set = set_load, .has_arg = 1,
     .help = "add the jobs of dump FILE (- = stdin) to the store, new\n"
              "handles, uniques already there skipped, and exit",
     .section = CONFIG_HELP_SPUR, .rank = 270},
    {.name = "max-packet-size", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_U32, .off = F(max_packet), .lo = 1024, .hi = UINT32_MAX,
     .def = 64u << 20, .err = "invalid --max-packet-size '%s' (1024..4294967295)",
     .help = "largest packet body accepted (default 67108864)",
     .section = CONFIG_HELP_SPUR, .rank = 280},
    {.name = "max-line-length", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_line), .lo = 64, .hi = 1 << 30,
     .def = 8192, .err = "invalid --max-line-length '%s' (64..1G)",
     .help = "longest admin line, newline included (default 8192)",
     .section = CONFIG_HELP_SPUR, .rank = 290},
    {.name = "max-output-buffer", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_output), .lo = 4096, .hi = 1ll << 40,
     .def = 256u << 20,
     .help = "unsent reply bytes before a connection is closed\n"
              "(default 268435456)",
     .section = CONFIG_HELP_SPUR, .rank = 300},
    {.name = "max-buffer-memory", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_buffer_memory), .lo = 0,
     .hi = 1ll << 50,
     .help = "bytes all connections' unfinished input (partial TLS\n"
              "records too) and unsent replies may hold together; past\n"
              "it the connections that do not read, largest first, are\n"
              "closed (default: 1/4 of RAM, at least 256M; 0 = no\n"
              "global bound)",
     .section = CONFIG_HELP_SPUR, .rank = 310},
    {.name = "max-connections", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_connections), .lo = 1, .hi = 10000000,
     .def = 100000,
     .help = "connections served at once (default 100000)",
     .section = CONFIG_HELP_SPUR, .rank = 320},
    {.name = "max-function-name", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_function), .lo = 1, .hi = 65535,
     .def = 512,
     .help = "longest function name (default 512)",
     .section = CONFIG_HELP_SPUR, .rank = 330},
    {.name = "max-functions", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_functions), .lo = 1, .hi = 100000000,
     .def = 1000000,
     .help = "functions known at once; more are refused (default 1000000)",
     .section = CONFIG_HELP_SPUR, .rank = 340},
    {.name = "max-client-id", .arg = "N",
     .parse = OPT_P_SIZE, .field = OPT_F_SIZE, .off = F(max_client_id), .lo = 1, .hi = 65535,
     .def = 127,
     .help = "SET_CLIENT_ID is cut to N bytes (default 127)",
     .section = CONFIG_HELP_SPUR, .rank = 350},
    {.name = "idle-timeout", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(idle_timeout),
     .help = "close a connection that leaves a packet (or a TLS record)\n"
              "unfinished for S seconds (default 0: never)",
     .section = CONFIG_HELP_SPUR, .rank = 400},
    {.name = "grab-wait", .arg = "MS",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(grab_wait), .dmax = 1000,
     .scale = 1000, .def = 0.002, .err = "invalid --grab-wait '%s' (milliseconds, 0..1000)",
     .help = "a GRAB that finds no job waits up to MS milliseconds for\n"
              "one before NO_JOB (default 2; 0 answers at once)",
     .section = CONFIG_HELP_SPUR, .rank = 410},
    {.name = "busy-poll", .arg = "US",
     .parse = OPT_P_LONG, .field = OPT_F_DOUBLE, .off = F(busy_poll), .lo = 0, .hi = 100000,
     .scale = 1e6, .def = 0.00005, .err = "invalid --busy-poll '%s' (microseconds, 0..100000)",
     .help = "poll up to US microseconds before sleeping while input keeps\n"
              "arriving that soon and no other process wants the cores;\n"
              "adaptive (default 50; 0 = never)",
     .section = CONFIG_HELP_SPUR, .rank = 420},
    {.name = "reply-batch", .arg = "US",
     .parse = OPT_P_LONG, .field = OPT_F_DOUBLE, .off = F(reply_batch), .lo = 0, .hi = 1000000,
     .scale = 1e6, .def = 0.0002, .err = "invalid --reply-batch '%s' (microseconds, 0..1000000)",
     .help = "a client waiting on several jobs may have its replies held up\n"
              "to US microseconds while jobs run, to write them together, and\n"
              "a foreground job's JOB_CREATED may wait for its result as long\n"
              "(default 200, at least 1000 while the machine is busy;\n"
              "0 = write in every loop iteration)",
     .section = CONFIG_HELP_SPUR, .rank = 430},
    {.name = "can-do-timeout", .arg = "WHAT",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(can_do_timeout_requeue),
     .choices = cando_choices, .err = "invalid --can-do-timeout '%s' (fail, requeue)",
     .help = "a job whose worker passes its CAN_DO_TIMEOUT: fail\n"
              "(default) sends WORK_FAIL; requeue re-queues it as a lost\n"
              "job, counted against -j, as gearmand (a late result from\n"
              "the slow worker still finishes it)",
     .section = CONFIG_HELP_SPUR, .rank = 440},
    {.name = "admin-shutdown", .arg = "WHO",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(admin_shutdown), .choices = shutdown_choices,
     .err = "invalid --admin-shutdown '%s' (local, any, none)",
     .help = "who may run 'shutdown': local (default), any, none",
     .section = CONFIG_HELP_SPUR, .rank = 450},
    {.name = "admin-allow", .arg = "RULE",
     .parse = OPT_P_LIST, .field = OPT_F_NONE, .off = F(admin_allow), .count_off = F(nadmin_allow),
     .hi = CONFIG_MAX_ADMIN_ALLOW, .err = "too many --admin-allow rules (at most %d)",
     .help = "who may run admin commands that change state (repeatable):\n"
              "unix, loopback, local, any, ADDR[/BITS], cert:NAME,\n"
              "listener:NAME (default: anyone; shutdown as above)",
     .section = CONFIG_HELP_SPUR, .rank = 460},
    {.name = "admin-read", .arg = "WHO",
     .parse = OPT_P_ENUM, .field = OPT_F_INT, .off = F(admin_read_allowed), .choices = read_choices,
     .err = "invalid --admin-read '%s' (all, allowed)",
     .help = "who may run read-only admin commands: all (default) or\n"
              "allowed (--admin-allow, else local connections)",
     .section = CONFIG_HELP_SPUR, .rank = 470},
    {.name = "policy", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(policy),
     .help = "function permissions: who may submit and CAN_DO which\n"
              "functions (re-read on SIGHUP; see SECURITY.md)",
     .section = CONFIG_HELP_SPUR, .rank = 480},
    {.name = "check-policy", .arg = "FILE",
     .parse = OPT_P_STRING, .field = OPT_F_NONE, .off = F(check_policy),
     .help = "check a policy file, print the result, exit (0 or 1)",
     .section = CONFIG_HELP_SPUR, .rank = 490},
    {.name = "shutdown-timeout", .arg = "S",
     .parse = OPT_P_SECONDS, .field = OPT_F_DOUBLE, .off = F(shutdown_timeout), .def = 30,
     .help = "longest wait of 'shutdown graceful' (default 30)",
     .section = CONFIG_HELP_SPUR, .rank = 500},
};

const struct opt_table config_options = {config_rows, sizeof config_rows / sizeof config_rows[0]};

/* The headers of the parts of --help (enum config_help_section). */
static const char *const usage_headers[] = {
    "Usage: spurd [OPTIONS]\n"
    "Spur " PACKAGE_VERSION ", a Gearman-compatible job server.\n"
    "\n"
    "Options with gearmand's names and meanings:\n",
    "\n"
    "Spur's own options:\n",
    "Recurring schedules ('schedule add', the config file's [schedule] section):\n",
    NULL,
};

void config_defaults_with(struct config *c, const struct opt_table *const *tables)
{
    memset(c, 0, sizeof *c);
    for (const struct opt_table *const *t = tables; *t != NULL; t++)
        opt_defaults(*t, c);
    c->verbose = LOG_ERROR;
    c->max_buffer_memory = config_default_buffer_memory();
    c->admin_shutdown = SHUTDOWN_LOCAL;
}

void config_usage(const struct opt_table *const *tables, FILE *out)
{
    opt_usage(tables, usage_headers, out);
}

/* apply parses argv (argv[0] is skipped) against tables into c. in_file: argv is one line of a
 * config file, where another config file may not be named. files, when not NULL, collects the
 * config files named (--config-file=FILE or @FILE) instead of ignoring them. Returns 0, 1 after
 * --help or --version, or -1 with a message in err. */
static int apply(struct config *c, const struct opt_table *const *tables, int argc, char **argv,
                 char *err, size_t errlen, FILE *out, struct cfiles *files, int in_file)
{
    struct opt_ctx x = {c, tables, usage_headers, in_file, out, err, errlen, files, config_word};
    return opt_apply(&x, argc, argv);
}

/* check checks the options that depend on each other, once all are parsed. Returns 0 or -1. */
static int check(struct config *c, char *err, size_t errlen)
{
    if (c->queue_type && strcasecmp(c->queue_type, "libsqlite3") == 0 && c->sqlite_db == NULL)
        return errf(err, errlen, "-q libsqlite3 needs --libsqlite3-db=FILE");
    if (config_tls_enabled(c) && (c->ssl_certificate == NULL || c->ssl_key == NULL))
        return errf(err, errlen, "--ssl and --ssl-listen need --ssl-certificate and --ssl-key");
    if (c->ssl_verify_client != SSL_VERIFY_CLIENT_NONE && c->ssl_ca_file == NULL)
        return errf(err, errlen, "--ssl-verify-client=%s needs --ssl-ca-file",
                    c->ssl_verify_client == SSL_VERIFY_CLIENT_REQUIRE ? "require" : "optional");
    if (config_http_max_body(c) > c->max_packet)
        return errf(err, errlen, "--http-max-body must be at most --max-packet-size");
    if (c->max_output < (size_t)c->max_packet + 4096)
        return errf(err, errlen, "--max-output-buffer must be at least --max-packet-size + 4096");
    if (c->max_buffer_memory != 0 && c->max_buffer_memory < buffer_memory_min(c)) {
        if (c->max_buffer_memory != config_default_buffer_memory())
            return errf(err, errlen,
                        "--max-buffer-memory must be 0 or at least 2 x --max-packet-size + 64k");
        c->max_buffer_memory = buffer_memory_min(c); /* the default follows the packet size */
    }
    return 0;
}

int config_parse_with(struct config *c, const struct opt_table *const *tables, int argc,
                      char **argv, char *err, size_t errlen, FILE *out)
{
    /* a first pass over the command line, into a scratch config, finds the config files (as
     * getopt sees them: abbreviations included) and reports command-line errors first */
    struct cfiles files = {NULL, 0};
    struct config scratch;
    config_defaults_with(&scratch, tables);
    int rc = apply(&scratch, tables, argc, argv, err, errlen, out, &files, 0);
    config_free(&scratch);
    /* the files' options first, in order, so the command line wins */
    for (int i = 0; rc == 0 && i < files.n; i++)
        rc = apply_file(c, tables, files.name[i], err, errlen, out);
    free(files.name);
    if (rc == 0)
        rc = apply(c, tables, argc, argv, err, errlen, out, NULL, 0);
    if (rc == 0)
        rc = check(c, err, errlen);
    return rc;
}

int config_split_hostport(const char *s, char *host, size_t hostlen, int *port)
{
    const char *colon;
    const char *h = s;
    size_t hl;
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (close == NULL || close[1] != ':')
            return -1;
        h = s + 1;
        hl = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(s, ':');
        if (colon == NULL || memchr(s, ':', (size_t)(colon - s)) != NULL)
            return -1; /* none, or an IPv6 address without brackets */
        hl = (size_t)(colon - s);
    }
    long v;
    if (opt_parse_long(colon + 1, 0, 65535, &v) != 0 || hl >= hostlen)
        return -1;
    memcpy(host, h, hl);
    host[hl] = '\0';
    if (strcmp(host, "*") == 0)
        host[0] = '\0';
    *port = (int)v;
    return 0;
}

unsigned config_tcp_user_timeout_ms(const struct config *c)
{
    if (c->tcp_user_timeout >= 0)
        return (unsigned)c->tcp_user_timeout * 1000u;
    if (c->keepalive_idle < 0 && c->keepalive_interval < 0 && c->keepalive_count < 0)
        return 0;
    unsigned long long idle = c->keepalive_idle > 0 ? (unsigned)c->keepalive_idle : 7200u;
    unsigned long long intvl = c->keepalive_interval > 0 ? (unsigned)c->keepalive_interval : 75u;
    unsigned long long cnt = c->keepalive_count > 0 ? (unsigned)c->keepalive_count : 9u;
    unsigned long long ms = (idle + intvl * cnt) * 1000u;
    return ms > UINT_MAX ? UINT_MAX : (unsigned)ms;
}

/* absolute replaces *p (when set and relative) with its absolute form. */
static int absolute(char **p, const char *cwd)
{
    if (*p == NULL || (*p)[0] == '/')
        return 0;
    char *a = file_absolute(*p, cwd);
    if (a == NULL)
        return -1;
    free(*p);
    *p = a;
    return 0;
}

int config_make_absolute(struct config *c, const char *cwd)
{
    if (c->log_file != NULL && strcmp(c->log_file, "stderr") != 0 &&
        strcmp(c->log_file, "none") != 0 && absolute(&c->log_file, cwd) != 0)
        return -1;
    if (absolute(&c->pid_file, cwd) != 0 || absolute(&c->port_file, cwd) != 0 ||
        absolute(&c->http_port_file, cwd) != 0 || absolute(&c->policy, cwd) != 0 ||
        absolute(&c->ssl_certificate, cwd) != 0 || absolute(&c->ssl_key, cwd) != 0 ||
        absolute(&c->ssl_ca_file, cwd) != 0 ||
        absolute(&c->unix_path, cwd) != 0 || absolute(&c->sqlite_db, cwd) != 0)
        return -1;
    if (c->store != NULL && strncmp(c->store, "sqlite:", 7) == 0 &&
        c->store[7] != '/') { /* "sqlite:" + a relative path */
        char *a = file_absolute(c->store + 7, cwd);
        char *s = a ? malloc(strlen(a) + 8) : NULL;
        if (s == NULL) {
            free(a);
            return -1;
        }
        memcpy(s, "sqlite:", 7);
        strcpy(s + 7, a);
        free(a);
        free(c->store);
        c->store = s;
    }
    return 0;
}

void config_free(struct config *c)
{
    for (int i = 0; i < c->nlisten; i++)
        free(c->listen[i]);
    c->nlisten = 0;
    for (int i = 0; i < c->nhttp_listen; i++)
        free(c->http_listen[i]);
    c->nhttp_listen = 0;
    memset(c->http_listen, 0, sizeof c->http_listen);
    free(c->http_port_file);
    c->http_port_file = NULL;
    for (int i = 0; i < c->nssl_listen; i++)
        free(c->ssl_listen[i]);
    c->nssl_listen = 0;
    memset(c->ssl_listen, 0, sizeof c->ssl_listen);
    free(c->ssl_certificate);
    free(c->ssl_key);
    free(c->ssl_ca_file);
    c->ssl_certificate = c->ssl_key = c->ssl_ca_file = NULL;
    free(c->unix_path);
    free(c->port_file);
    free(c->pid_file);
    free(c->log_file);
    free(c->user);
    free(c->job_handle_prefix);
    free(c->store);
    free(c->queue_type);
    free(c->sqlite_db);
    free(c->sqlite_table);
    free(c->pg_conninfo);
    free(c->pg_table);
    free(c->dump_file);
    free(c->load_file);
    c->dump_file = c->load_file = NULL;
    for (int i = 0; i < c->nadmin_allow; i++)
        free(c->admin_allow[i]);
    c->nadmin_allow = 0;
    for (int i = 0; i < c->nretry; i++)
        free(c->retry[i].func);
    c->nretry = 0;
    for (int i = 0; i < c->njob_timeout; i++)
        free(c->job_timeout[i].func);
    c->njob_timeout = 0;
    for (int i = 0; i < c->njob_ttl; i++)
        free(c->job_ttl[i].func);
    c->njob_ttl = 0;
    free(c->policy);
    free(c->check_policy);
    c->policy = c->check_policy = NULL;
    free(c->server_id);
    c->server_id = NULL;
    for (int i = 0; i < c->nschedules; i++)
        free(c->schedules[i]);
    free(c->schedules);
    c->schedules = NULL;
    c->nschedules = 0;
    for (int i = 0; i < c->nbroadcast; i++)
        free(c->broadcast[i]);
    c->nbroadcast = 0;
    for (int i = 0; i < c->nlimits; i++)
        free(c->limits[i]);
    free(c->limits);
    c->limits = NULL;
    c->nlimits = 0;
    free(c->schedule_tz);
    c->schedule_tz = NULL;
    for (int i = 0; i < c->ntakeover; i++)
        free(c->takeover[i]);
    c->ntakeover = 0;
    memset(c->takeover, 0, sizeof c->takeover);
    memset(c->listen, 0, sizeof c->listen);
    c->unix_path = c->port_file = c->pid_file = c->log_file = c->user = NULL;
    c->job_handle_prefix = c->store = c->queue_type = c->sqlite_db = c->sqlite_table = c->pg_conninfo =
        c->pg_table = NULL;
}
