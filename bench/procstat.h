/* SPDX-License-Identifier: BSD-3-Clause */
/* procstat: what the load generators (spur-bench, beanstalk-bench) sample of the server under
 * test in /proc: its resident memory and its CPU time. Linux only; header-only, for the two
 * programs. */
#ifndef SPUR_BENCH_PROCSTAT_H
#define SPUR_BENCH_PROCSTAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* procstat_rss returns the VmRSS of pid in bytes (/proc/PID/status), or -1. */
static inline long long procstat_rss(long pid)
{
    char path[64], line[256];
    long long kb = -1;
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtoll(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

/* procstat_cpu_ns returns utime+stime of pid (all threads) in nanoseconds, or -1. The kernel
 * counts in clock ticks (usually 10 ms), so deltas are that coarse. */
static inline long long procstat_cpu_ns(long pid)
{
    char path[64], buf[1024];
    if (pid <= 0)
        return -1;
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* the command name may contain spaces and ')' */
    unsigned long long ut = 0, st = 0;
    /* after ") ": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime */
    if (p == NULL ||
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long tick = sysconf(_SC_CLK_TCK);
    return tick > 0 ? (long long)((ut + st) * (1000000000ULL / (unsigned long long)tick)) : -1;
}

#endif
