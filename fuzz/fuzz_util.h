/* SPDX-License-Identifier: BSD-3-Clause */
/* fuzz_util: small helpers shared by the libFuzzer targets: a reader that takes bytes from the
 * fuzz input (returning zeros once it is used up), and a check that aborts with a message. */
#ifndef SPUR_FUZZ_UTIL_H
#define SPUR_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* struct reader walks the fuzz input from the front. */
struct reader {
    const uint8_t *p; /* the input (borrowed from libFuzzer) */
    size_t n;         /* its length */
    size_t off;       /* bytes taken so far */
};

/* rd_left returns how many input bytes are left. */
static inline size_t rd_left(const struct reader *r) { return r->n - r->off; }

/* rd_u8 takes one byte, or returns 0 when the input is used up. */
static inline uint8_t rd_u8(struct reader *r) { return r->off < r->n ? r->p[r->off++] : 0; }

/* rd_u16 takes two bytes, big-endian. */
static inline uint16_t rd_u16(struct reader *r)
{
    uint16_t hi = rd_u8(r);
    return (uint16_t)((hi << 8) | rd_u8(r));
}

/* rd_u32 takes four bytes, big-endian. */
static inline uint32_t rd_u32(struct reader *r)
{
    uint32_t hi = rd_u16(r);
    return (hi << 16) | rd_u16(r);
}

/* rd_bytes takes up to want bytes and returns a borrowed pointer; *got is how many it took. */
static inline const uint8_t *rd_bytes(struct reader *r, size_t want, size_t *got)
{
    size_t left = rd_left(r);
    *got = want < left ? want : left;
    const uint8_t *p = r->p + r->off;
    r->off += *got;
    return p;
}

/* FUZZ_CHECK aborts (a crash libFuzzer records) when cond is false. */
#define FUZZ_CHECK(cond, ...)                                                          \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: contract violated: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
            abort();                                                                   \
        }                                                                              \
    } while (0)

#endif
