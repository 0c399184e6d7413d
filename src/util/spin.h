/* SPDX-License-Identifier: BSD-3-Clause */
/* spin: adaptive busy polling. When the loop runs out of work it may keep polling without
 * blocking for a short window before it sleeps in epoll_wait: input that arrives within the
 * window is read without a sleep and a wake-up, which on a busy server costs less CPU than
 * sleeping. The window adapts to the gaps it sees, as KVM's halt polling does: it grows while
 * input keeps arriving soon after the loop runs dry, and shrinks when the gaps are longer than the
 * limit, so an idle or lightly loaded server never spins. It also stops while spinning stops
 * paying: when fewer than half of its recent spins found input (the poll's own hit rate), the
 * window halves. And it never spins while other processes want the CPU:
 *  - crowded: the machine's run queue (the caller samples the runnable count of /proc/loadavg,
 *    spin_sample_due / spin_runnable) holds, on average over the last few milliseconds, as many
 *    other runnable threads as there are cores: a spin would take a core from one of them;
 *  - preempted: a spin poll came back long after the one before (SPIN_LOST): another process had
 *    our core; the loop calms down for a back-off period that doubles while this goes on
 *    (SPIN_CALM_MIN .. SPIN_CALM_MAX).
 * Reply batching (--reply-batch) goes the other way: while crowded, a batch may wait at least
 * SPIN_CROWDED_BATCH (spin_batch), since a pipelining client's replies written together cost it
 * and the server less CPU per job, which is what a shared core lacks.
 * Pure: the caller passes times and counts. */
#ifndef SPUR_SPIN_H
#define SPUR_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

#define SPIN_START 0.000005    /* first window after a short gap: 5 microseconds */
#define SPIN_LOST 0.0002       /* two spin polls further apart than this: we were preempted */
#define SPIN_CALM_MIN 0.01     /* the first back-off after a preemption: 10 ms */
#define SPIN_CALM_MAX 1.0      /* the longest back-off: 1 s */
#define SPIN_SAMPLE 0.001      /* the run queue is sampled at most once a millisecond */
#define SPIN_LOAD_ONE 256      /* fixed-point scale of struct spin's load */
#define SPIN_HIT_ONE 256       /* hit rate scale: hit_rate == SPIN_HIT_ONE means every spin hit */
#define SPIN_CROWDED_BATCH 0.001 /* the least reply batch while crowded: 1 ms (spin_batch) */

/* struct spin is the polling state. */
struct spin {
    double max;        /* --busy-poll: the largest window in seconds, 0 = never spin */
    double window;     /* the current window */
    double idle_since; /* when the loop last ran out of work, 0 while it is busy */
    double until;      /* the end of the current spin, 0 if not spinning */
    double last_poll;  /* when the current spin last polled (spin_dry, spin_more), 0 if none */
    double calm_until; /* no spinning before this: we were preempted */
    double calm;       /* the next back-off: SPIN_CALM_MIN, doubled per preemption in a row */
    double sampled;    /* when spin_runnable last ran, 0 before the first sample */
    int ncpu;          /* cores this process may run on (spin_init: 1; spin_cpus) */
    int load;          /* moving average of other runnable threads, x SPIN_LOAD_ONE */
    int crowded;       /* load says the other threads fill every core: do not spin */
    int hit_rate;      /* moving average of spins that found input, 0..SPIN_HIT_ONE */
    unsigned long preemptions; /* how many times the loop calmed down (for tests and logs) */
    unsigned long spins;       /* spins started (for the log at exit) */
    unsigned long hits;        /* spins that found input (for the log at exit) */
};

/* spin_init sets s up with the largest window max (seconds, 0 turns polling off). */
void spin_init(struct spin *s, double max);

/* spin_dry notes that the loop ran out of work at now. Returns 1 if it should poll without
 * blocking until s->until, 0 if it should block. Calls while already dry change nothing. */
int spin_dry(struct spin *s, double now);

/* spin_more reports whether a poll that found nothing at now should be followed by another
 * (the window is still open); once it returns 0 the loop should block. */
int spin_more(struct spin *s, double now);

/* spin_input notes that input arrived at now, and adapts the window to the gap since the loop ran
 * dry: kept if the window covered it, doubled if the limit would have, halved (down to 0) if
 * not even the limit would have. */
void spin_input(struct spin *s, double now);

/* spin_sample_due reports whether the caller should sample the process's involuntary context
 * switches now (at most once per SPIN_SAMPLE; never when polling is off) and pass them to
 * spin_switches. */
int spin_sample_due(const struct spin *s, double now);

/* spin_cpus sets the number of cores the process may run on (at least 1). */
void spin_cpus(struct spin *s, int ncpu);

/* spin_runnable takes a sample, at now, of how many threads other than the loop's own are
 * runnable on the machine (the running count of /proc/loadavg, less one). The loop is crowded
 * while their moving average (a quarter weight per sample) reaches the cores less a half: it
 * then does not spin. It also ages the back-off: once the loop has run undisturbed
 * for as long as the next back-off since the last one ended, that back-off halves (down to
 * SPIN_CALM_MIN). */
void spin_runnable(struct spin *s, double now, int others);

/* spin_batch returns how long lazy replies may wait (seconds) given --reply-batch batch: batch,
 * or SPIN_CROWDED_BATCH if that is longer and the machine is crowded. 0 (batching off) stays 0. */
double spin_batch(const struct spin *s, double batch);

#ifdef __cplusplus
}
#endif
#endif
