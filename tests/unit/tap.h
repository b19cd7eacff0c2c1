/* tap.h — a tiny TAP producer for the C unit tests (automake's tap-driver counts each case). */
#ifndef MT_TAP_H
#define MT_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int tap_n, tap_failed;

/* Report one case: ok/not ok with its name. */
static inline int tap_ok(int cond, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("%sok %d - ", cond ? "" : "not ", ++tap_n);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

/* Print a diagnostic line (shown in the test log). */
static inline void tap_diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
}

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

/* Removes the directory tree a test made (a diagnostic when it cannot). */
static inline void tap_rm_tree(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		tap_diag("could not remove %s", dir);
}

/* Check a call that returns an mt status; print the error record on failure. */
#define TAP_CALL(expr, errp, ...)                                                       \
	(tap_ok((expr) == 0, __VA_ARGS__) ||                                             \
	 (tap_diag("  %s -> %d: %s", #expr, (errp)->code, (errp)->message), 0))

#endif
