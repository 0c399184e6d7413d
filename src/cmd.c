/* cmd: the handlers for binary request packets. */
#include "cmd.h"

#include <stdlib.h>
#include <string.h>

#include "engine.h"

static void not_expected(struct peer *p)
{
    peer_send_error(p, PROTO_ERR_INVALID_COMMAND, "Command not expected");
}

static void do_echo(struct peer *p, const struct pb_packet *pkt)
{
    struct proto_arg a = {pkt->data, pkt->data_len};
    peer_send(p, CMD_ECHO_RES, &a, 1);
}

void cmd_dispatch(struct peer *p, const struct pb_packet *pkt)
{
    switch (pkt->cmd) {
    case CMD_ECHO_REQ:
        do_echo(p, pkt);
        break;
    default:
        not_expected(p);
        break;
    }
}

void cmd_peer_gone(struct peer *p)
{
    (void)p;
}
