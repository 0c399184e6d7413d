/* SPDX-License-Identifier: BSD-3-Clause */
/* file: writing the small files spurd leaves for others (pid file, port file) safely. No libev. */
#ifndef SPUR_FILE_H
#define SPUR_FILE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* file_write_atomic replaces path with a regular file holding text, mode 0644. It writes a
 * temporary file next to path, created with O_EXCL|O_NOFOLLOW (never through a symlink, never
 * into an existing file), then rename()s it over path, so a symlink at path is replaced, not
 * followed, and readers see the old or the new contents, never a partial file.
 * Returns 0, or -1 with errno set (the temporary file is removed). */
int file_write_atomic(const char *path, const char *text);

/* file_absolute returns a malloc'd absolute form of path: path itself when it starts with '/',
 * else cwd + "/" + path. Returns NULL when out of memory. */
char *file_absolute(const char *path, const char *cwd);

/* file_dirname writes the directory part of path into out (size n): "." for a bare name, "/"
 * for a file in the root. Returns 0, or -1 when path does not fit in out. */
int file_dirname(const char *path, char *out, size_t n);

#ifdef __cplusplus
}
#endif
#endif
