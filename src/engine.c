/* engine: the server's pure state and the seam to the I/O shell. */
#include "engine.h"

#include <string.h>

int engine_init(struct engine *e, const struct config *cfg, const struct engine_ops *ops,
                void *shell)
{
    memset(e, 0, sizeof *e);
    e->cfg = cfg;
    e->ops = *ops;
    e->shell = shell;
    return 0;
}

void engine_destroy(struct engine *e)
{
    (void)e;
}
