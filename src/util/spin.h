/* SPDX-License-Identifier: BSD-3-Clause */
/* spin: adaptive busy polling. When the loop runs out of work it may keep polling without
 * blocking for a short window before it sleeps in epoll_wait: input that arrives within the
 * window is read without a sleep and a wake-up, which on a busy server costs less CPU than
 * sleeping. The window adapts to the gaps it sees, as KVM's halt polling does: it grows while
 * input keeps arriving soon after the loop runs dry, and shrinks when the gaps are longer than the
 * limit, so an idle or lightly loaded server never spins. It also stops while spinning stops
 * paying: when fewer than half of its recent spins found input (the poll's own hit rate), the
 * window halves. And it never spins while the process is being preempted (the run queue is longer
 * than the cores, e.g. CPU-bound work on the same machine): a spin poll that came back long after
 * the one before (time lost to other processes), or involuntary context switches counted by the
 * kernel (the caller samples them, spin_sample_due / spin_switches), calm the process down for a
 * back-off period that doubles while preemption goes on (SPIN_CALM_MIN .. SPIN_CALM_MAX). While
 * calm, the loop neither spins nor batches replies (spin_batching). Pure: the caller passes the
 * times and counts. */
#ifndef SPUR_SPIN_H
#define SPUR_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

#define SPIN_START 0.000005    /* first window after a short gap: 5 microseconds */
#define SPIN_LOST 0.0002       /* two spin polls further apart than this: we were preempted */
#define SPIN_CALM_MIN 0.01     /* the first back-off after a preemption: 10 ms */
#define SPIN_CALM_MAX 1.0      /* the longest back-off: 1 s */
#define SPIN_SAMPLE 0.001      /* involuntary context switches are sampled at most once a ms */
#define SPIN_HIT_ONE 256       /* hit rate scale: hit_rate == SPIN_HIT_ONE means every spin hit */

/* struct spin is the polling state. */
struct spin {
    double max;        /* --busy-poll: the largest window in seconds, 0 = never spin */
    double window;     /* the current window */
    double idle_since; /* when the loop last ran out of work, 0 while it is busy */
    double until;      /* the end of the current spin, 0 if not spinning */
    double last_poll;  /* when the current spin last polled (spin_dry, spin_more), 0 if none */
    double calm_until; /* no spinning and no reply batching before this: we were preempted */
    double calm;       /* the next back-off: SPIN_CALM_MIN, doubled per preemption in a row */
    double sampled;    /* when spin_switches last ran, 0 before the first sample */
    long nivcsw;       /* involuntary context switches at that sample */
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

/* spin_switches takes a sample of the involuntary context switch count (getrusage's ru_nivcsw)
 * at now. A count that rose since the previous sample means the kernel took the CPU from us for
 * another runnable process: the loop calms down (no spin, no batching) for a back-off period.
 * Once the loop has run undisturbed for as long as the next back-off since the last one ended,
 * that back-off halves (down to SPIN_CALM_MIN). */
void spin_switches(struct spin *s, double now, long nivcsw);

/* spin_batching reports whether replies may be batched at now (--reply-batch): not while calm,
 * since a reply that waits may then wait a whole time slice of another process. */
int spin_batching(const struct spin *s, double now);

#ifdef __cplusplus
}
#endif
#endif
