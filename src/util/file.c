/* SPDX-License-Identifier: BSD-3-Clause */
/* file: writing the small files spurd leaves for others (pid file, port file) safely. */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int file_write_atomic(const char *path, const char *text)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    unlink(tmp); /* a leftover of an earlier run with the same pid; a symlink is removed, not followed */
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            close(fd);
            unlink(tmp);
            errno = e;
            return -1;
        }
        off += (size_t)w;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return -1;
    }
    return 0;
}

char *file_absolute(const char *path, const char *cwd)
{
    if (path[0] == '/')
        return strdup(path);
    size_t a = strlen(cwd), b = strlen(path);
    char *out = malloc(a + b + 2);
    if (out == NULL)
        return NULL;
    memcpy(out, cwd, a);
    size_t o = a;
    if (o == 0 || out[o - 1] != '/')
        out[o++] = '/';
    memcpy(out + o, path, b + 1);
    return out;
}

int file_dirname(const char *path, char *out, size_t n)
{
    if (snprintf(out, n, "%s", path) >= (int)n)
        return -1;
    char *slash = strrchr(out, '/');
    if (slash == NULL)
        snprintf(out, n, ".");
    else if (slash == out)
        out[1] = '\0';
    else
        *slash = '\0';
    return 0;
}
