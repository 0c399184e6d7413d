/* admin: the admin text commands with gearmand's exact replies. */
#include "admin.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "log.h"
#include "proto_admin.h"
#include "spur_config.h"

/* reply queues a C string. */
static void reply(struct peer *p, const char *s) { peer_write(p, s, strlen(s)); }

/* unknown_command sends gearmand's reply, with the token glued to "command". */
static void unknown_command(struct peer *p, const struct pa_token *tok)
{
    char buf[256];
    int tl = tok ? (int)(tok->len < 200 ? tok->len : 200) : 0;
    int n = snprintf(buf, sizeof buf, "ERR UNKNOWN_COMMAND Unknown+server+command%.*s\r\n", tl,
                     tok ? tok->ptr : "");
    peer_write(p, buf, (size_t)n);
}

void admin_line_too_long(struct peer *p)
{
    reply(p, "ERR LINE_TOO_LONG Line+longer+than+max-line-length\r\n");
}

void admin_line(struct peer *p, const char *line, size_t len)
{
    struct pa_token tok[PA_MAX_TOKENS];
    size_t n = pa_split(line, len, tok, PA_MAX_TOKENS);
    if (n == 0) {
        unknown_command(p, NULL);
        return;
    }
    if (pa_token_is(&tok[0], "version")) {
        reply(p, "OK " PACKAGE_VERSION "\n");
    } else if (pa_token_is(&tok[0], "getpid")) {
        char buf[32];
        int k = snprintf(buf, sizeof buf, "OK %ld\n", (long)getpid());
        peer_write(p, buf, (size_t)k);
    } else {
        unknown_command(p, &tok[0]);
    }
}
