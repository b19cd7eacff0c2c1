/* cli-error.c — the one-line messages commands print on stderr: failures, usage errors, --debug lines. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>

#include "cli.h"

/* Error lines must stay one line even when a message carries a newline (HDF5's do). */
static void cli_print_line(const char *prefix, const char *msg, const char *suffix)
{
	cli_progress_hide();
	fputs(prefix, stderr);
	for (const char *p = msg; *p; p++)
		fputc(*p == '\n' || *p == '\r' ? ' ' : *p, stderr);
	fputs(suffix, stderr);
	fputc('\n', stderr);
}

int cli_error(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	cli_print_line("matorage: ", msg, "");
	return CLI_FAIL;
}

int cli_fail(const mt_error *err)
{
	cli_print_line("matorage: ", err->message[0] ? err->message : mt_strerror(err->code), "");
	return CLI_FAIL;
}

int cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	char msg[1024], suffix[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (cmd) {
		char prefix[64];
		snprintf(prefix, sizeof prefix, "matorage: %s: ", cmd->name);
		snprintf(suffix, sizeof suffix, " (see 'matorage help %s')", cmd->name);
		cli_print_line(prefix, msg, suffix);
	} else {
		cli_print_line("matorage: ", msg, " (see 'matorage --help')");
	}
	return CLI_USAGE;
}

void cli_debug_line(void *ud, const char *line)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	cli_print_line("matorage: debug: ", line, "");
	pthread_mutex_unlock(&lock);
}
