/* app-alloc.c — allocation for the application (command line and browser): out of memory prints and exits. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

static __attribute__((noreturn)) void app_oom(void)
{
	fputs("matorage: out of memory\n", stderr);
	exit(EXIT_FAILURE); /* 1: the operation failed, as the command line documents */
}

void *app_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		app_oom();
	return p;
}

void *app_xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		app_oom();
	return p;
}

void *app_xreallocarray(void *p, size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes))
		app_oom();
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q)
		app_oom();
	return q;
}

void *app_xgrow(void *p, size_t *cap, size_t need, size_t first)
{
	if (need <= *cap && p)
		return p;
	size_t c = *cap ? *cap : first;
	while (c < need) {
		if (c > SIZE_MAX / 2)
			app_oom();
		c *= 2;
	}
	*cap = c;
	return app_xreallocarray(p, c, 1);
}

char *app_xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		app_oom();
	return p;
}

char *app_xvasprintf(const char *fmt, va_list ap)
{
	va_list ap2;
	va_copy(ap2, ap);
	int n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		app_oom();
	char *s = app_xmalloc((size_t)n + 1);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *app_xasprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = app_xvasprintf(fmt, ap);
	va_end(ap);
	return s;
}

char *app_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0, got;
	char *buf = app_xmalloc(cap);
	while ((got = fread(buf + n, 1, cap - n, f)) > 0) {
		n += got;
		if (n == cap)
			buf = app_xreallocarray(buf, cap *= 2, 1);
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	*len = n;
	return buf;
}
