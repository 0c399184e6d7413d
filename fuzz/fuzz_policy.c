/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_policy: the --policy file parser (acl_policy_parse) and the matcher on arbitrary bytes.
 *
 * Input: byte 0 picks which sample connections are asked about; the rest is the policy text.
 * A parse either fails with a "fuzz:LINE: message" error or gives a policy whose rules and
 * principals keep the limits of acl.h; every cached decision (acl_policy_allows, asked twice)
 * must equal the uncached one (acl_policy_decide). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "acl.h"
#include "fuzz_util.h"
#include "peer.h"

/* the connections asked about: address, listener, certificate names */
static const struct {
    const char *ip, *listener, *certs;
    size_t certs_len;
} who[] = {
    {"127.0.0.1", "127.0.0.1:4730", NULL, 0},
    {"unix", "unix:/run/spur.sock", NULL, 0},
    {"10.1.2.3", "0.0.0.0:4730", "client\0client.example.com\0", 27},
    {"::1", "[::1]:4730", NULL, 0},
    {"2001:db8::7", "[::]:4730", "a b\0", 5},
    {"::ffff:192.0.2.9", "http", NULL, 0},
};
#define NWHO (sizeof who / sizeof who[0])

/* the function names asked about; more come from the rules' own patterns */
static const char *const names[] = {"", "f", "reports.daily", "reports.", "x*", "secret"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct reader r = {data, size, 0};
    uint8_t pick = rd_u8(&r);
    size_t n;
    const char *text = (const char *)rd_bytes(&r, rd_left(&r), &n);
    char *copy = malloc(n ? n : 1); /* exact size: a read past the text is reported */
    FUZZ_CHECK(copy != NULL, "malloc");
    memcpy(copy, text, n);
    char err[512] = "";
    struct acl_policy *pol = acl_policy_parse(copy, n, "fuzz", err, sizeof err);
    if (pol == NULL) {
        FUZZ_CHECK(strncmp(err, "fuzz:", 5) == 0, "an error without file:line: %s", err);
        free(copy);
        return 0;
    }
    FUZZ_CHECK(pol->nrules <= ACL_MAX_RULES, "%zu rules", pol->nrules);
    FUZZ_CHECK(pol->npr >= 0 && pol->npr <= ACL_MAX_PRINCIPALS, "%d principals", pol->npr);
    int last = 0;
    for (size_t i = 0; i < pol->nrules; i++) {
        const struct acl_rule *rl = &pol->rules[i];
        FUZZ_CHECK(rl->line > last, "rule lines out of order");
        last = rl->line;
        FUZZ_CHECK(rl->pmask != 0, "a rule with no principal");
        FUZZ_CHECK(pol->npr == 64 || (rl->pmask >> pol->npr) == 0, "a principal bit past npr");
        FUZZ_CHECK(rl->ops != 0 && (rl->ops & ~3u) == 0, "ops %u", rl->ops);
        FUZZ_CHECK(strlen(rl->pat) == rl->patlen, "pattern length");
    }
    for (int i = 0; i < pol->npr; i++)
        for (int j = i + 1; j < pol->npr; j++)
            FUZZ_CHECK(!acl_principal_same(&pol->pr[i], &pol->pr[j]), "duplicate principal");

    struct peer peers[NWHO];
    char certs[NWHO][32];
    for (size_t k = 0; k < NWHO; k++) {
        memset(&peers[k], 0, sizeof peers[k]);
        snprintf(peers[k].ip, sizeof peers[k].ip, "%s", who[k].ip);
        peers[k].listener = who[k].listener;
        if (who[k].certs != NULL) {
            memcpy(certs[k], who[k].certs, who[k].certs_len);
            peers[k].cert_names = certs[k];
        }
    }
    for (size_t k = 0; k < NWHO; k++) {
        if (!(pick & (1u << k)) && pick != 0)
            continue;
        struct peer *p = &peers[k];
        for (int round = 0; round < 2; round++) {
            for (size_t i = 0; i < sizeof names / sizeof names[0] + pol->nrules && i < 64; i++) {
                const char *nm;
                size_t nl;
                if (i < sizeof names / sizeof names[0]) {
                    nm = names[i];
                    nl = strlen(nm);
                } else {
                    nm = pol->rules[i - sizeof names / sizeof names[0]].pat;
                    nl = pol->rules[i - sizeof names / sizeof names[0]].patlen;
                }
                for (int op = 0; op < ACL_OPS; op++) {
                    int got = acl_policy_allows(pol, p, (enum acl_op)op, nm, nl);
                    FUZZ_CHECK(p->acl_gen == pol->gen, "the peer was not resolved");
                    int want = acl_policy_decide(pol, p->acl_mask, (enum acl_op)op, nm, nl);
                    FUZZ_CHECK(got == want, "cached %d, uncached %d for '%.*s'", got, want,
                               (int)nl, nm);
                }
            }
        }
    }
    acl_policy_free(pol);
    free(copy);
    return 0;
}
