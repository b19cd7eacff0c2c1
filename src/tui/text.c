/* text.c — text as the browser lays it out: tabs expanded to their stops, long lines wrapped at words to the screen's width. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "tui.h"

#define TAB_STOP 8

char *tui_expand_tabs(const char *s)
{
	size_t tabs = 0;
	for (const char *p = s; *p; p++)
		tabs += *p == '\t';
	char *out = app_xmalloc(strlen(s) + tabs * TAB_STOP + 1), *q = out;
	/* Columns are counted in code points: tracebacks are ASCII where it matters. */
	size_t col = 0;
	for (const char *p = s; *p; p++) {
		if (*p == '\t') {
			do
				*q++ = ' ';
			while (++col % TAB_STOP);
		} else {
			*q++ = *p;
			col += ((unsigned char)*p & 0xc0) != 0x80;
		}
	}
	*q = '\0';
	return out;
}

/* The bytes of the code point starting at s. */
static size_t char_len(const char *s)
{
	unsigned char c = (unsigned char)*s;
	size_t n = c < 0x80 ? 1 : c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
	for (size_t i = 1; i < n; i++)
		if (!s[i])
			return i;
	return n;
}

const char *tui_wrap_next(const char *s, int w, size_t *len)
{
	size_t at = 0, space = 0;
	int cols = 0;
	while (s[at]) {
		char one[8] = { 0 };
		size_t n = char_len(s + at);
		memcpy(one, s + at, n);
		int cw = disp_columns(one);
		if (cols + cw > w && at > 0)
			break;
		if (s[at] == ' ')
			space = at;
		cols += cw;
		at += n;
	}
	/* Break after the last blank when there is one in the second half of the
	 * line: words stay whole, and a long key or URL still fills the line. */
	if (s[at] && space > at / 2) {
		*len = space;
		return s + space + 1;
	}
	*len = at;
	return s + at;
}

/* Where continuation lines start: under the text after a two-blank gap in an
 * indented line ("  E        the last error ..." in the help, a size and a key
 * in a gc log), else at the margin.  ASCII offsets: such lines are ASCII. */
static int hang(const char *s, int w)
{
	if (strncmp(s, "  ", 2))
		return 0;
	const char *p = s + strspn(s, " ");
	const char *gap = strstr(p, "  ");
	if (!gap)
		return 0;
	int at = (int)(gap - s) + (int)strspn(gap, " ");
	return at < w / 2 ? at : 0;
}

int tui_wrap_lines(const char *s, int w)
{
	int n = 0, h = hang(s, w);
	size_t len;
	if (w <= 0)
		return 1;
	do {
		s = tui_wrap_next(s, n ? w - h : w, &len);
		n++;
	} while (*s);
	return n;
}

int tui_text_wrap(int y, int x, int w, int maxlines, int role, const char *s)
{
	int n = 0, h = hang(s, w);
	size_t len;
	if (w <= 0)
		return 0;
	do {
		int in = n ? h : 0;
		const char *next = tui_wrap_next(s, w - in, &len);
		char *line = app_xmalloc(len + 1);
		memcpy(line, s, len);
		line[len] = '\0';
		disp_text(y + n, x + in, w - in, role, line);
		free(line);
		s = next;
		n++;
	} while (*s && n < maxlines);
	return n;
}
