/* SPDX-License-Identifier: BSD-3-Clause */
/* spin: adaptive busy polling (see spin.h). */
#include "spin.h"

void spin_init(struct spin *s, double max)
{
    s->max = max > 0 ? max : 0;
    s->window = 0;
    s->idle_since = 0;
    s->until = 0;
}

int spin_dry(struct spin *s, double now)
{
    if (s->idle_since > 0)
        return s->until > now;
    s->idle_since = now;
    s->until = s->window > 0 ? now + s->window : 0;
    return s->until > now;
}

int spin_more(struct spin *s, double now)
{
    if (s->until > now)
        return 1;
    s->until = 0;
    return 0;
}

void spin_input(struct spin *s, double now)
{
    if (s->idle_since <= 0)
        return; /* input while busy: nothing to learn */
    double gap = now - s->idle_since;
    s->idle_since = 0;
    s->until = 0;
    if (gap <= s->window)
        return; /* the window caught it */
    if (gap <= s->max) {
        /* a longer window would have caught it */
        double w = s->window > 0 ? s->window * 2 : SPIN_START;
        s->window = w < s->max ? w : s->max;
        return;
    }
    /* not even the longest window would have: spin less */
    s->window /= 2;
    if (s->window < SPIN_START)
        s->window = 0;
}
