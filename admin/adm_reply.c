/* SPDX-License-Identifier: BSD-3-Clause */
/* adm_reply: reply framing and gearadmin's printing rules; see adm_reply.h. */
#include "adm_reply.h"

#include <string.h>

void adm_reply_scan_init(struct adm_reply_scan *s, enum adm_reply_kind kind)
{
	s->kind = kind;
	s->scanned = 0;
	s->line_start = 0;
}

/* starts_with says whether the n bytes at p begin with the C string prefix. */
static bool starts_with(const char *p, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);
	return n >= k && memcmp(p, prefix, k) == 0;
}

/* is_status_line says whether line[0..n) is a one-line OK/ERR reply rather than list data. */
static bool is_status_line(const char *line, size_t n)
{
	if (!starts_with(line, n, "OK") && !starts_with(line, n, "ERR"))
		return false;
	return memchr(line, '\t', n) == NULL;
}

/* is_terminator says whether line[0..n), its '\n' included, is "." with an optional '\r'. */
static bool is_terminator(const char *line, size_t n)
{
	return (n == 2 && memcmp(line, ".\n", 2) == 0) || (n == 3 && memcmp(line, ".\r\n", 3) == 0);
}

/* line_ends_reply says whether the complete line [start, end) finishes the reply. */
static bool line_ends_reply(const struct adm_reply_scan *s, const char *buf, size_t start,
			    size_t end)
{
	if (s->kind == ADM_REPLY_LINE)
		return true;
	if (start == 0 && is_status_line(buf, end))
		return true;
	if (s->kind == ADM_REPLY_END)
		return (end - start == 4 && memcmp(buf + start, "END\n", 4) == 0) ||
		       (end - start == 5 && memcmp(buf + start, "END\r\n", 5) == 0);
	return is_terminator(buf + start, end - start);
}

size_t adm_reply_scan_feed(struct adm_reply_scan *s, const char *buf, size_t len)
{
	while (s->scanned < len) {
		const char *nl = memchr(buf + s->scanned, '\n', len - s->scanned);
		if (nl == NULL) {
			s->scanned = len;
			return 0;
		}
		size_t end = (size_t)(nl - buf) + 1;
		size_t start = s->line_start;
		s->scanned = end;
		s->line_start = end;
		if (line_ends_reply(s, buf, start, end))
			return end;
	}
	return 0;
}

void adm_reply_format(const char *reply, size_t len, struct adm_reply_out *out)
{
	out->to_stderr = false;
	out->prefix = "";
	out->body = reply;
	out->body_len = len;
	if (starts_with(reply, len, "OK\r")) {
		out->body = "OK\n";
		out->body_len = 3;
	} else if (starts_with(reply, len, "OK ")) {
		out->body = reply + 3;
		out->body_len = len - 3;
	} else if (starts_with(reply, len, "ERR ")) {
		out->to_stderr = true;
		out->prefix = "Error: ";
		out->body = reply + 4;
		out->body_len = len - 4;
	}
}
