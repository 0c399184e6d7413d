/* SPDX-License-Identifier: BSD-3-Clause */
/* acl: admin access control and function permissions (see acl.h, docs/SECURITY.md). */
#include "acl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config.h"
#include "engine.h"
#include "esc.h"
#include "peer.h"

_Static_assert(DENIED_KINDS == 3, "struct acl.limit has one limiter per DENIED_* kind");

/* acl_gen_next is the generation of the next policy parsed (0 means "none" in a peer). */
static uint32_t acl_gen_next = 1;

/* errf formats a message into err and returns -1. */
static int errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* ------------------------------------------------------------ principals */

/* has_prefix reports whether s[0..len) starts with the C string pre; *rest is what follows. */
static int has_prefix(const char *s, size_t len, const char *pre, size_t *rest)
{
    size_t pl = strlen(pre);
    if (len < pl || strncasecmp(s, pre, pl) != 0)
        return 0;
    *rest = pl;
    return 1;
}

/* word_is reports whether s[0..len) is word, ignoring case. */
static int word_is(const char *s, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(s, word, len) == 0;
}

/* name_ok reports whether a cert or listener name has no control byte. */
static int name_ok(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    return len > 0;
}

int acl_principal_parse(const char *s, size_t len, struct acl_principal *out, char *err,
                        size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t off;
    if (word_is(s, len, "any")) {
        out->kind = ACL_P_ANY;
        return 0;
    }
    if (word_is(s, len, "unix")) {
        out->kind = ACL_P_UNIX;
        return 0;
    }
    if (word_is(s, len, "loopback")) {
        out->kind = ACL_P_LOOPBACK;
        return 0;
    }
    if (word_is(s, len, "local")) {
        out->kind = ACL_P_LOCAL;
        return 0;
    }
    if (has_prefix(s, len, "cert:", &off) || has_prefix(s, len, "listener:", &off)) {
        out->kind = s[0] == 'c' || s[0] == 'C' ? ACL_P_CERT : ACL_P_LISTENER;
        if (!name_ok(s + off, len - off))
            return errf(err, errlen, "empty name or control byte in '%.*s'", (int)(len < 200 ? len : 200), s);
        out->name = strndup(s + off, len - off);
        if (out->name == NULL)
            return errf(err, errlen, "out of memory");
        return 0;
    }
    /* an address, with or without /BITS */
    char a[64];
    const char *slash = memchr(s, '/', len);
    size_t al = slash != NULL ? (size_t)(slash - s) : len;
    if (al == 0 || al >= sizeof a)
        goto bad;
    memcpy(a, s, al);
    a[al] = '\0';
    int max;
    if (inet_pton(AF_INET, a, out->addr) == 1) {
        max = 32;
    } else if (inet_pton(AF_INET6, a, out->addr) == 1) {
        out->v6 = 1;
        max = 128;
    } else {
        goto bad;
    }
    out->bits = max;
    if (slash != NULL) {
        size_t i = al + 1;
        if (i == len || len - i > 3)
            goto bad;
        int b = 0;
        for (; i < len; i++) {
            if (s[i] < '0' || s[i] > '9')
                goto bad;
            b = b * 10 + (s[i] - '0');
        }
        if (b > max)
            goto bad;
        out->bits = b;
    }
    /* host bits set below the prefix are a mistake worth reporting */
    for (int bit = out->bits; bit < max; bit++)
        if (out->addr[bit / 8] & (0x80u >> (bit % 8)))
            return errf(err, errlen, "'%.*s' has address bits set past /%d", (int)len, s,
                        out->bits);
    out->kind = ACL_P_CIDR;
    out->name = NULL;
    return 0;
bad:
    return errf(err, errlen,
                "unknown principal '%.*s' (any, unix, loopback, local, cert:NAME, "
                "listener:NAME, ADDRESS[/BITS])",
                (int)(len < 200 ? len : 200), s);
}

/* prefix_eq reports whether the first bits bits of a and b are equal. */
static int prefix_eq(const unsigned char *a, const unsigned char *b, int bits)
{
    int whole = bits / 8, rest = bits % 8;
    if (memcmp(a, b, (size_t)whole) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned mask = (0xffu << (8 - rest)) & 0xffu;
    return (a[whole] & mask) == (b[whole] & mask);
}

/* peer_addr parses p's address: returns 4 (IPv4, or IPv4-mapped IPv6: a holds the IPv4
 * address), 16 (IPv6) or 0 (none: unix, "-"). */
static int peer_addr(const struct peer *p, unsigned char a[16])
{
    if (inet_pton(AF_INET, p->ip, a) == 1)
        return 4;
    if (inet_pton(AF_INET6, p->ip, a) == 1) {
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            memmove(a, a + 12, 4);
            return 4;
        }
        return 16;
    }
    return 0;
}

static int is_unix(const struct peer *p)
{
    return p->listener != NULL && strncmp(p->listener, "unix:", 5) == 0;
}

static int is_loopback(const struct peer *p)
{
    unsigned char a[16];
    int n = peer_addr(p, a);
    if (n == 4)
        return a[0] == 127;
    if (n == 16) {
        static const unsigned char one[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
        return memcmp(a, one, 16) == 0;
    }
    return 0;
}

int acl_principal_match(const struct acl_principal *pr, const struct peer *p)
{
    switch (pr->kind) {
    case ACL_P_ANY: return 1;
    case ACL_P_UNIX: return is_unix(p);
    case ACL_P_LOOPBACK: return !is_unix(p) && is_loopback(p);
    case ACL_P_LOCAL: return is_unix(p) || is_loopback(p);
    case ACL_P_LISTENER: return p->listener != NULL && strcmp(p->listener, pr->name) == 0;
    case ACL_P_CERT:
        for (const char *n = p->cert_names; n != NULL && *n != '\0'; n += strlen(n) + 1)
            if (strcmp(n, pr->name) == 0)
                return 1;
        return 0;
    case ACL_P_CIDR: {
        if (is_unix(p))
            return 0;
        unsigned char a[16];
        int n = peer_addr(p, a);
        if (n == 4 && !pr->v6)
            return prefix_eq(a, pr->addr, pr->bits);
        if (n == 4 && pr->v6) { /* an IPv6 block holding IPv4-mapped addresses */
            unsigned char m[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
            memcpy(m + 12, a, 4);
            return prefix_eq(m, pr->addr, pr->bits);
        }
        if (n == 16 && pr->v6)
            return prefix_eq(a, pr->addr, pr->bits);
        return 0;
    }
    }
    return 0;
}

int acl_principal_same(const struct acl_principal *a, const struct acl_principal *b)
{
    if (a->kind != b->kind)
        return 0;
    if (a->kind == ACL_P_CERT || a->kind == ACL_P_LISTENER)
        return strcmp(a->name, b->name) == 0;
    if (a->kind == ACL_P_CIDR)
        return a->v6 == b->v6 && a->bits == b->bits && memcmp(a->addr, b->addr, 16) == 0;
    return 1;
}

void acl_principal_free(struct acl_principal *pr)
{
    free(pr->name);
    pr->name = NULL;
}

/* ------------------------------------------------------------ the policy file */

/* struct acl_entry is the cached decisions about one function name: for each op, bit c of
 * known says class c was decided, the same bit of allow what was decided. */
struct acl_entry {
    uint64_t known[ACL_OPS];
    uint64_t allow[ACL_OPS];
    size_t len;
    char name[]; /* len bytes, not NUL-terminated */
};

/* struct word is one word of a policy line, quotes removed, in a line-sized buffer. */
struct word {
    const char *s;
    size_t len;
};

#define ACL_MAX_WORDS 64 /* words on one policy line */

/* split_words splits line[0..len) into words (in place: quotes are removed by moving bytes).
 * Words are separated by spaces and tabs; a '#' that starts a word starts a comment; "..."
 * keeps spaces inside a word. Returns the word count, or -1 with a message in err. */
static int split_words(char *line, size_t len, struct word *w, char *err, size_t errlen)
{
    int n = 0;
    size_t i = 0;
    while (i < len) {
        while (i < len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i == len || line[i] == '#')
            break;
        if (n == ACL_MAX_WORDS)
            return errf(err, errlen, "too many words (at most %d)", ACL_MAX_WORDS);
        char *out = line + i, *start = out;
        int quoted = 0;
        while (i < len && (quoted || (line[i] != ' ' && line[i] != '\t'))) {
            if (line[i] == '"') {
                quoted = !quoted;
                i++;
                continue;
            }
            *out++ = line[i++];
        }
        if (quoted)
            return errf(err, errlen, "unterminated quote");
        w[n].s = start;
        w[n].len = (size_t)(out - start);
        n++;
    }
    return n;
}

/* add_principal finds or adds pr among pol's principals; returns its index, or -1 (too many:
 * pr is freed). Takes ownership of pr's name. */
static int add_principal(struct acl_policy *pol, struct acl_principal *pr)
{
    for (int i = 0; i < pol->npr; i++)
        if (acl_principal_same(&pol->pr[i], pr)) {
            acl_principal_free(pr);
            return i;
        }
    if (pol->npr == ACL_MAX_PRINCIPALS) {
        acl_principal_free(pr);
        return -1;
    }
    pol->pr[pol->npr] = *pr;
    return pol->npr++;
}

/* parse_line parses one line's words into a rule (nw > 0). Returns 0 or -1 with err. */
static int parse_line(struct acl_policy *pol, const struct word *w, int nw, int lineno,
                      char *err, size_t errlen)
{
    if (nw < 4)
        return errf(err, errlen, "expected: allow|deny submit|can_do|all FUNCTION PRINCIPAL...");
    struct acl_rule r = {0};
    r.line = lineno;
    if (word_is(w[0].s, w[0].len, "allow"))
        r.allow = 1;
    else if (!word_is(w[0].s, w[0].len, "deny"))
        return errf(err, errlen, "'%.*s': expected allow or deny", (int)w[0].len, w[0].s);
    if (word_is(w[1].s, w[1].len, "submit"))
        r.ops = 1u << ACL_SUBMIT;
    else if (word_is(w[1].s, w[1].len, "can_do"))
        r.ops = 1u << ACL_CAN_DO;
    else if (word_is(w[1].s, w[1].len, "all"))
        r.ops = (1u << ACL_SUBMIT) | (1u << ACL_CAN_DO);
    else
        return errf(err, errlen, "'%.*s': expected submit, can_do or all", (int)w[1].len,
                    w[1].s);
    const char *f = w[2].s;
    size_t fl = w[2].len;
    for (size_t i = 0; i < fl; i++) {
        if ((unsigned char)f[i] <= 0x20 || f[i] == 0x7f)
            return errf(err, errlen, "control byte or space in the function pattern (write "
                                     "it %%XX, as the listings do: %%09 for a TAB)");
        if (f[i] == '*' && i != fl - 1)
            return errf(err, errlen, "'*' may only end a function pattern");
    }
    if (fl == 0)
        return errf(err, errlen, "empty function pattern");
    if (f[fl - 1] == '*') {
        r.prefix = 1;
        fl--;
    }
    for (int i = 3; i < nw; i++) {
        struct acl_principal pr;
        char perr[300];
        if (acl_principal_parse(w[i].s, w[i].len, &pr, perr, sizeof perr) != 0)
            return errf(err, errlen, "%s", perr);
        int idx = add_principal(pol, &pr);
        if (idx < 0)
            return errf(err, errlen, "too many distinct principals (at most %d)",
                        ACL_MAX_PRINCIPALS);
        r.pmask |= 1ull << idx;
    }
    if (pol->nrules == ACL_MAX_RULES)
        return errf(err, errlen, "too many rules (at most %d)", ACL_MAX_RULES);
    r.pat = malloc(fl + 1);
    if (r.pat == NULL)
        return errf(err, errlen, "out of memory");
    memcpy(r.pat, f, fl);
    r.patlen = esc_decode(r.pat, fl); /* the escaped form of the listings: %09 is a TAB */
    r.pat[r.patlen] = '\0';
    if (memchr(r.pat, '\0', r.patlen) != NULL) {
        free(r.pat);
        return errf(err, errlen, "a NUL byte (%%00) in a function pattern: no name has one");
    }
    struct acl_rule *nr = realloc(pol->rules, (pol->nrules + 1) * sizeof *nr);
    if (nr == NULL) {
        free(r.pat);
        return errf(err, errlen, "out of memory");
    }
    pol->rules = nr;
    pol->rules[pol->nrules++] = r;
    return 0;
}

struct acl_policy *acl_policy_parse(const char *text, size_t len, const char *name, char *err,
                                    size_t errlen)
{
    struct acl_policy *pol = calloc(1, sizeof *pol);
    char *line = malloc(ACL_MAX_LINE);
    if (pol == NULL || line == NULL) {
        free(pol);
        free(line);
        errf(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    hmap_init(&pol->cache);
    size_t pos = 0;
    int lineno = 0;
    while (pos < len) {
        lineno++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t ll = nl != NULL ? (size_t)(nl - (text + pos)) : len - pos;
        if (ll + 1 > ACL_MAX_LINE) {
            errf(err, errlen, "%s:%d: line longer than %d bytes", name, lineno, ACL_MAX_LINE);
            goto fail;
        }
        memcpy(line, text + pos, ll);
        pos += ll + (nl != NULL);
        if (ll > 0 && line[ll - 1] == '\r')
            ll--;
        if (memchr(line, '\0', ll) != NULL) {
            errf(err, errlen, "%s:%d: NUL byte", name, lineno);
            goto fail;
        }
        struct word w[ACL_MAX_WORDS];
        char msg[400];
        int nw = split_words(line, ll, w, msg, sizeof msg);
        if (nw > 0 && parse_line(pol, w, nw, lineno, msg, sizeof msg) != 0)
            nw = -1;
        if (nw < 0) {
            errf(err, errlen, "%s:%d: %s", name, lineno, msg);
            goto fail;
        }
    }
    free(line);
    pol->seed = ((uint64_t)(uintptr_t)pol << 16) ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
    pol->gen = acl_gen_next++;
    if (acl_gen_next == 0)
        acl_gen_next = 1;
    return pol;
fail:
    free(line);
    acl_policy_free(pol);
    return NULL;
}

struct acl_policy *acl_policy_load(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        errf(err, errlen, "cannot read policy file %s: %s", path, strerror(errno));
        return NULL;
    }
    char *text = malloc(ACL_MAX_FILE + 1);
    size_t n = text != NULL ? fread(text, 1, ACL_MAX_FILE + 1, f) : 0;
    int bad = text == NULL || ferror(f);
    fclose(f);
    if (bad) {
        free(text);
        errf(err, errlen, "cannot read policy file %s", path);
        return NULL;
    }
    if (n > ACL_MAX_FILE) {
        free(text);
        errf(err, errlen, "policy file %s is larger than %u bytes", path, ACL_MAX_FILE);
        return NULL;
    }
    struct acl_policy *pol = acl_policy_parse(text, n, path, err, errlen);
    free(text);
    return pol;
}

/* cache_clear frees every cached decision. */
static void cache_clear(struct acl_policy *pol)
{
    struct hmap_iter it;
    hmap_iter_init(&it, &pol->cache);
    for (void *e; (e = hmap_iter_next(&it)) != NULL;)
        free(e);
    hmap_free(&pol->cache);
    hmap_init(&pol->cache);
}

void acl_policy_free(struct acl_policy *pol)
{
    if (pol == NULL)
        return;
    cache_clear(pol);
    hmap_free(&pol->cache);
    for (int i = 0; i < pol->npr; i++)
        acl_principal_free(&pol->pr[i]);
    for (size_t i = 0; i < pol->nrules; i++)
        free(pol->rules[i].pat);
    free(pol->rules);
    free(pol);
}

int acl_policy_decide(const struct acl_policy *pol, uint64_t mask, enum acl_op op,
                      const char *name, size_t len)
{
    for (size_t i = 0; i < pol->nrules; i++) {
        const struct acl_rule *r = &pol->rules[i];
        if (!(r->ops & (1u << op)) || !(r->pmask & mask))
            continue;
        if (r->prefix ? (len >= r->patlen && memcmp(name, r->pat, r->patlen) == 0)
                      : (len == r->patlen && memcmp(name, r->pat, len) == 0))
            return r->allow;
    }
    return 0;
}

/* peer_mask returns the set of pol's principals that p is. */
static uint64_t peer_mask(const struct acl_policy *pol, const struct peer *p)
{
    uint64_t m = 0;
    for (int i = 0; i < pol->npr; i++)
        if (acl_principal_match(&pol->pr[i], p))
            m |= 1ull << i;
    return m;
}

/* resolve sets p's class under pol (once per peer and policy). */
static void resolve(struct acl_policy *pol, struct peer *p)
{
    uint64_t m = peer_mask(pol, p);
    p->acl_gen = pol->gen;
    p->acl_mask = m;
    for (int c = 0; c < pol->ncls; c++)
        if (pol->cls[c] == m) {
            p->acl_class = (uint8_t)c;
            return;
        }
    if (pol->ncls == ACL_MAX_CLASSES) {
        p->acl_class = ACL_NO_CLASS;
        return;
    }
    pol->cls[pol->ncls] = m;
    p->acl_class = (uint8_t)pol->ncls++;
}

int acl_policy_allows(struct acl_policy *pol, struct peer *p, enum acl_op op, const char *name,
                      size_t len)
{
    if (p->acl_gen != pol->gen)
        resolve(pol, p);
    if (p->acl_class == ACL_NO_CLASS)
        return acl_policy_decide(pol, p->acl_mask, op, name, len);
    uint64_t bit = 1ull << p->acl_class;
    uint64_t h = hmap_hash_bytes(name, len, pol->seed);
    struct hmap_probe pr;
    struct acl_entry *e;
    for (e = hmap_first(&pol->cache, h, &pr); e != NULL; e = hmap_next(&pr))
        if (e->len == len && memcmp(e->name, name, len) == 0)
            break;
    if (e != NULL && (e->known[op] & bit))
        return (e->allow[op] & bit) != 0;
    int allow = acl_policy_decide(pol, p->acl_mask, op, name, len);
    if (e == NULL) {
        if (pol->cache.count >= ACL_CACHE_MAX)
            cache_clear(pol);
        e = calloc(1, sizeof *e + len);
        if (e == NULL)
            return allow; /* out of memory: decided, not cached */
        e->len = len;
        memcpy(e->name, name, len);
        if (hmap_insert(&pol->cache, e, h) != 0) {
            free(e);
            return allow;
        }
    }
    e->known[op] |= bit;
    if (allow)
        e->allow[op] |= bit;
    return allow;
}

/* ------------------------------------------------------------ the server's state */

int acl_new(const struct config *cfg, struct acl **out, char *err, size_t errlen)
{
    *out = NULL;
    if (cfg->nadmin_allow == 0 && !cfg->admin_read_allowed && cfg->policy == NULL)
        return 0;
    struct acl *a = calloc(1, sizeof *a);
    if (a == NULL)
        return errf(err, errlen, "out of memory");
    for (int k = 0; k < DENIED_KINDS; k++)
        a->limit[k] = (struct log_limit){1.0, 0, 0, 10, 0};
    a->admin_read_allowed = cfg->admin_read_allowed;
    for (int i = 0; i < cfg->nadmin_allow && i < ACL_MAX_ADMIN; i++) {
        const char *s = cfg->admin_allow[i];
        char perr[300];
        if (acl_principal_parse(s, strlen(s), &a->admin[i], perr, sizeof perr) != 0) {
            acl_free(a);
            return errf(err, errlen, "invalid --admin-allow: %s", perr);
        }
        a->nadmin = i + 1;
    }
    if (cfg->policy != NULL) {
        a->policy_path = strdup(cfg->policy);
        if (a->policy_path == NULL) {
            acl_free(a);
            return errf(err, errlen, "out of memory");
        }
        a->policy = acl_policy_load(a->policy_path, err, errlen);
        if (a->policy == NULL) {
            acl_free(a);
            return -1;
        }
    }
    *out = a;
    return 0;
}

int acl_reload(struct acl *a, char *err, size_t errlen)
{
    if (a == NULL || a->policy_path == NULL)
        return 0;
    struct acl_policy *pol = acl_policy_load(a->policy_path, err, errlen);
    if (pol == NULL)
        return -1;
    acl_policy_free(a->policy);
    a->policy = pol;
    return 0;
}

void acl_free(struct acl *a)
{
    if (a == NULL)
        return;
    for (int i = 0; i < a->nadmin; i++)
        acl_principal_free(&a->admin[i]);
    acl_policy_free(a->policy);
    free(a->policy_path);
    free(a);
}

/* first_cert returns p's first certificate name, or "-". */
static const char *first_cert(const struct peer *p)
{
    return p->cert_names != NULL && p->cert_names[0] != '\0' ? p->cert_names : "-";
}

int acl_admin_check(struct acl *a, struct peer *p, int changes, const char *what)
{
    if (a == NULL || (changes ? a->nadmin == 0 : !a->admin_read_allowed))
        return 0;
    if (a->nadmin == 0 && (p->flags & PEER_LOCAL)) /* --admin-read=allowed alone: local */
        return 0;
    for (int i = 0; i < a->nadmin; i++)
        if (acl_principal_match(&a->admin[i], p))
            return 0;
    p->eng->stats.permission_denied[DENIED_ADMIN]++;
    log_limited(&a->limit[DENIED_ADMIN], LOG_WARNING, __FILE__, __LINE__,
                "permission denied: admin '%s' from %s (listener %s, cert %s, fd %d)", what,
                p->ip, p->listener, first_cert(p), p->fd);
    static const char msg[] = "ERR " ACL_ERR_CODE " Not+allowed+from+this+connection\r\n";
    peer_write(p, msg, sizeof msg - 1);
    return -1;
}

int acl_func_check(struct acl *a, struct peer *p, enum acl_op op, const char *name, size_t len)
{
    if (a->policy == NULL || acl_policy_allows(a->policy, p, op, name, len))
        return 0;
    int kind = op == ACL_SUBMIT ? DENIED_SUBMIT : DENIED_CAN_DO;
    p->eng->stats.permission_denied[kind]++;
    const char *verb = op == ACL_SUBMIT ? "submit" : "can_do";
    char shown[ESC_MAX(200)]; /* escaped (esc.h): no name can forge a log line */
    size_t sl = esc_encode(name, len < 200 ? len : 200, shown, ESC_SPACE);
    log_limited(&a->limit[kind], LOG_WARNING, __FILE__, __LINE__,
                "permission denied: %s '%.*s' from %s (listener %s, cert %s, fd %d)", verb,
                (int)sl, shown, p->ip, p->listener, first_cert(p), p->fd);
    peer_send_error(p, ACL_ERR_CODE,
                    op == ACL_SUBMIT ? "Not allowed to submit this function"
                                     : "Not allowed to do this function");
    return -1;
}
