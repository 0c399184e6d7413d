/* SPDX-License-Identifier: BSD-3-Clause */
/* spin: adaptive busy polling. When the loop runs out of work it may keep polling without
 * blocking for a short window before it sleeps in epoll_wait: input that arrives within the
 * window is read without a sleep and a wake-up, which on a busy server costs less CPU than
 * sleeping. The window adapts to the gaps it sees, as KVM's halt polling does: it grows while
 * input keeps arriving soon after the loop runs dry, and shrinks when the gaps are longer than the
 * limit, so an idle or lightly loaded server never spins. Pure: the caller passes the times. */
#ifndef SPUR_SPIN_H
#define SPUR_SPIN_H

#ifdef __cplusplus
extern "C" {
#endif

#define SPIN_START 0.000005 /* first window after a short gap: 5 microseconds */

/* struct spin is the polling state. */
struct spin {
    double max;        /* --busy-poll: the largest window in seconds, 0 = never spin */
    double window;     /* the current window */
    double idle_since; /* when the loop last ran out of work, 0 while it is busy */
    double until;      /* the end of the current spin, 0 if not spinning */
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

#ifdef __cplusplus
}
#endif
#endif
