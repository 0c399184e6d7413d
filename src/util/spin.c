/* SPDX-License-Identifier: BSD-3-Clause */
/* spin: adaptive busy polling (see spin.h). */
#include "spin.h"

void spin_init(struct spin *s, double max)
{
    s->max = max > 0 ? max : 0;
    s->window = 0;
    s->idle_since = 0;
    s->until = 0;
    s->last_poll = 0;
    s->calm_until = 0;
    s->calm = SPIN_CALM_MIN;
    s->sampled = 0;
    s->ncpu = 1;
    s->load = 0;
    s->crowded = 0;
    s->hit_rate = SPIN_HIT_ONE;
    s->preemptions = 0;
    s->spins = 0;
    s->hits = 0;
}

/* preempted calms the loop down from now for the current back-off, and doubles the next one. */
static void preempted(struct spin *s, double now)
{
    s->calm_until = now + s->calm;
    s->calm = s->calm * 2 < SPIN_CALM_MAX ? s->calm * 2 : SPIN_CALM_MAX;
    s->until = 0;
    s->last_poll = 0;
    s->window = 0; /* relearn the gaps from the start once calm again */
    s->preemptions++;
}

/* note_spin feeds one spin's outcome (hit: input came while spinning) to the hit rate, and
 * halves the window when fewer than half of the recent spins paid. */
static void note_spin(struct spin *s, int hit)
{
    s->hits += hit != 0;
    s->hit_rate += ((hit ? SPIN_HIT_ONE : 0) - s->hit_rate) / 8;
    if (s->hit_rate >= SPIN_HIT_ONE / 2)
        return;
    s->window /= 2;
    if (s->window < SPIN_START)
        s->window = 0;
    s->hit_rate = SPIN_HIT_ONE; /* judge the smaller window afresh */
}

int spin_dry(struct spin *s, double now)
{
    if (s->idle_since > 0)
        return s->until > now;
    s->idle_since = now;
    s->until = s->window > 0 && now >= s->calm_until && !s->crowded ? now + s->window : 0;
    s->last_poll = s->until > 0 ? now : 0;
    s->spins += s->until > 0;
    return s->until > now;
}

int spin_more(struct spin *s, double now)
{
    if (s->last_poll > 0 && now - s->last_poll > SPIN_LOST) {
        /* the previous poll came back long ago: another process had our CPU */
        preempted(s, now);
        return 0;
    }
    if (s->until > now) {
        s->last_poll = now;
        return 1;
    }
    if (s->until > 0)
        note_spin(s, 0); /* the window closed without input */
    s->until = 0;
    s->last_poll = 0;
    return 0;
}

void spin_input(struct spin *s, double now)
{
    if (s->idle_since <= 0)
        return; /* input while busy: nothing to learn */
    double gap = now - s->idle_since;
    if (s->until > 0)
        note_spin(s, 1); /* the spin found input */
    s->idle_since = 0;
    s->until = 0;
    s->last_poll = 0;
    if (gap <= s->window)
        return; /* the window caught it */
    if (now < s->calm_until || s->crowded)
        return; /* learn nothing from gaps we could not spin for */
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

int spin_sample_due(const struct spin *s, double now)
{
    return s->max > 0 && now - s->sampled >= SPIN_SAMPLE;
}

void spin_cpus(struct spin *s, int ncpu)
{
    s->ncpu = ncpu > 0 ? ncpu : 1;
}

void spin_runnable(struct spin *s, double now, int others)
{
    s->sampled = now;
    if (others < 0)
        others = 0;
    s->load += (others * SPIN_LOAD_ONE - s->load) / 4;
    int crowded = s->load >= s->ncpu * SPIN_LOAD_ONE - SPIN_LOAD_ONE / 2;
    if (crowded && !s->crowded) {
        s->until = 0; /* stop a spin under way */
        s->last_poll = 0;
    }
    s->crowded = crowded;
    if (now - s->calm_until >= s->calm && s->calm > SPIN_CALM_MIN) {
        /* undisturbed for as long as the back-off: the next one may be shorter */
        s->calm /= 2;
        if (s->calm < SPIN_CALM_MIN)
            s->calm = SPIN_CALM_MIN;
        s->calm_until = now; /* the next halving needs another undisturbed stretch */
    }
}

double spin_batch(const struct spin *s, double batch)
{
    return batch > 0 && s->crowded && batch < SPIN_CROWDED_BATCH ? SPIN_CROWDED_BATCH : batch;
}
