/* SPDX-License-Identifier: BSD-3-Clause */
/* acl: who may do what. Admin access control (--admin-allow, --admin-read) and function
 * permissions (--policy FILE: who may CAN_DO and who may SUBMIT which functions). Pure: the
 * parser and the matcher take text and a struct peer's identity fields (ip, listener,
 * cert_names, PEER_LOCAL) and never touch a descriptor. See docs/SECURITY.md. */
#ifndef SPUR_ACL_H
#define SPUR_ACL_H

#include <stddef.h>
#include <stdint.h>

#include "hmap.h"
#include "log.h"
#include "proto.h"

#ifdef __cplusplus
extern "C" {
#endif

struct config;
struct peer;

#define ACL_MAX_ADMIN 32          /* --admin-allow rules at most */
#define ACL_MAX_PRINCIPALS 64     /* distinct principals in one policy file */
#define ACL_MAX_RULES 10000       /* rules in one policy file */
#define ACL_MAX_LINE 4096         /* longest policy line, newline included */
#define ACL_MAX_FILE (4u << 20)   /* largest policy file, bytes */
#define ACL_MAX_CLASSES 64        /* peer classes whose decisions are cached (more: uncached) */
#define ACL_CACHE_MAX 65536       /* function names with cached decisions (then cleared) */
#define ACL_NO_CLASS 255          /* peer.acl_class of a peer past ACL_MAX_CLASSES */

/* the ERROR code of a refused packet and the start of a refused admin line */
#define ACL_ERR_CODE PROTO_ERR_PERMISSION_DENIED

/* enum acl_pkind is what a principal matches. */
enum acl_pkind {
    ACL_P_ANY = 0,  /* every connection */
    ACL_P_UNIX,     /* a unix-socket connection (its listener is "unix:...") */
    ACL_P_LOOPBACK, /* a TCP (or HTTP) connection from 127.0.0.0/8 or ::1 */
    ACL_P_LOCAL,    /* unix or loopback */
    ACL_P_CIDR,     /* an address block (IPv4 also matches its IPv4-mapped IPv6 form) */
    ACL_P_CERT,     /* a verified TLS client certificate name (peer.cert_names) */
    ACL_P_LISTENER, /* the listener's name (peer.listener) */
};

/* struct acl_principal is one parsed principal. */
struct acl_principal {
    enum acl_pkind kind;  /* what it matches */
    int v6;               /* ACL_P_CIDR: an IPv6 block */
    unsigned char addr[16]; /* ACL_P_CIDR: the block's address (4 bytes used for IPv4) */
    int bits;             /* ACL_P_CIDR: prefix length */
    char *name;           /* ACL_P_CERT, ACL_P_LISTENER: the name (owned) */
};

/* acl_principal_parse parses s[0..len): "any", "unix", "loopback", "local", "cert:NAME",
 * "listener:NAME", an address block "10.0.0.0/8", "::1/128", or an address alone (a /32 or
 * /128). Returns 0, or -1 with a message in err. out->name is malloc'd (acl_principal_free). */
int acl_principal_parse(const char *s, size_t len, struct acl_principal *out, char *err,
                        size_t errlen);

/* acl_principal_match reports whether connection p is pr. Reads p->ip, p->listener,
 * p->cert_names only. */
int acl_principal_match(const struct acl_principal *pr, const struct peer *p);

/* acl_principal_same reports whether a and b match the same connections by construction. */
int acl_principal_same(const struct acl_principal *a, const struct acl_principal *b);

/* acl_principal_free frees what pr owns. */
void acl_principal_free(struct acl_principal *pr);

/* enum acl_op is what a policy rule governs. */
enum acl_op {
    ACL_SUBMIT = 0, /* every SUBMIT_JOB* packet and HTTP POST /FUNC */
    ACL_CAN_DO = 1, /* CAN_DO and CAN_DO_TIMEOUT */
    ACL_OPS
};

/* struct acl_rule is one policy line: allow or deny ops on the functions that match pat, for
 * connections that are any of the principals in pmask. */
struct acl_rule {
    int allow;       /* 1 allow, 0 deny */
    unsigned ops;    /* 1 << ACL_SUBMIT | 1 << ACL_CAN_DO */
    char *pat;       /* the function name, or the prefix before a final '*' (owned) */
    size_t patlen;   /* bytes of pat */
    int prefix;      /* pat ended with '*': any name that starts with pat */
    uint64_t pmask;  /* bit i: policy principal i */
    int line;        /* its line in the file */
};

/* struct acl_policy is one loaded policy file: its rules, in file order (the first that matches
 * decides; none: deny), the distinct principals they name, and the decision cache. A peer is
 * resolved once per policy into a class (the set of principals it is); a decision is cached
 * per (function name, class) so a submit costs one hash lookup, not a scan of the rules. */
struct acl_policy {
    struct acl_principal pr[ACL_MAX_PRINCIPALS]; /* distinct principals */
    int npr;                      /* entries of pr */
    struct acl_rule *rules;       /* nrules rules in file order */
    size_t nrules;                /* entries of rules */
    uint64_t cls[ACL_MAX_CLASSES]; /* the principal set of each class seen so far */
    int ncls;                     /* classes in cls */
    struct hmap cache;            /* struct acl_entry by function name */
    uint64_t seed;                /* the cache's hash seed */
    uint32_t gen;                 /* this policy's generation (never 0; peer.acl_gen) */
};

/* acl_policy_parse parses a policy from text[0..len); name is used in messages. Returns the
 * policy, or NULL with "NAME:LINE: message" in err. The format is in docs/SECURITY.md. */
struct acl_policy *acl_policy_parse(const char *text, size_t len, const char *name, char *err,
                                    size_t errlen);

/* acl_policy_load reads and parses the file at path (at most ACL_MAX_FILE bytes). Returns the
 * policy, or NULL with a message in err ("PATH:LINE: message", or why it cannot be read). */
struct acl_policy *acl_policy_load(const char *path, char *err, size_t errlen);

/* acl_policy_free frees pol (NULL is fine). */
void acl_policy_free(struct acl_policy *pol);

/* acl_policy_allows reports whether pol lets p do op on the function name[0..len): the cached
 * decision for p's class, else the first matching rule (then cached). p's class is resolved
 * on its first check under pol (p->acl_gen, p->acl_class). O(1) amortised. */
int acl_policy_allows(struct acl_policy *pol, struct peer *p, enum acl_op op, const char *name,
                      size_t len);

/* acl_policy_decide is the uncached decision: the first rule for op whose pattern matches the
 * name and one of whose principals is in mask. Returns 1 allow, 0 deny (also when none). */
int acl_policy_decide(const struct acl_policy *pol, uint64_t mask, enum acl_op op,
                      const char *name, size_t len);

/* struct acl is the server's access state (engine.acl): NULL when neither --admin-allow,
 * --admin-read=allowed nor --policy is given, so the hot path pays one pointer test. */
struct acl {
    struct acl_principal admin[ACL_MAX_ADMIN]; /* --admin-allow rules */
    int nadmin;                   /* entries of admin (0: today's rules) */
    int admin_read_allowed;       /* --admin-read=allowed: read-only commands need a rule too */
    struct acl_policy *policy;    /* --policy, or NULL */
    char *policy_path;            /* the file reloaded on SIGHUP, or NULL (owned) */
    struct log_limit limit[3];    /* refusals logged, per DENIED_* kind (10 a second each) */
};

/* acl_new builds the access state from cfg into *out: NULL when nothing is configured. Loads
 * the policy file. Returns 0, or -1 with a message in err. */
int acl_new(const struct config *cfg, struct acl **out, char *err, size_t errlen);

/* acl_reload re-reads the policy file (SIGHUP). On an error the old policy stays and err says
 * why ("FILE:LINE: message"). Returns 0 (also with no policy file), or -1. */
int acl_reload(struct acl *a, char *err, size_t errlen);

/* acl_free frees a (NULL is fine). */
void acl_free(struct acl *a);

/* acl_admin_set reports whether --admin-allow rules were given (they then also decide who may
 * shut down, instead of --admin-shutdown=local/any). */
static inline int acl_admin_set(const struct acl *a) { return a != NULL && a->nadmin > 0; }

/* acl_admin_check decides an admin command from p (changes: it changes state; what: its name,
 * for the log). Allowed: returns 0. Refused: queues the ERR PERMISSION_DENIED line, counts and
 * logs the refusal, returns -1. With no --admin-allow, changes are allowed here (the commands
 * keep their own rules, e.g. --admin-shutdown). Reads are refused only with
 * --admin-read=allowed, to connections no rule matches (with no rule: to non-local ones). */
int acl_admin_check(struct acl *a, struct peer *p, int changes, const char *what);

/* acl_func_check decides a submit or CAN_DO of name[0..len) from p under a's policy. Allowed
 * (or no policy): 0. Refused: queues an ERROR PERMISSION_DENIED packet, counts and logs the
 * refusal, returns -1. The connection stays usable. */
int acl_func_check(struct acl *a, struct peer *p, enum acl_op op, const char *name, size_t len);

#ifdef __cplusplus
}
#endif
#endif
