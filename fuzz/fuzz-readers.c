/* fuzz-readers.c — libFuzzer target: the recipe readers (IDX, CSV) must turn any file into a tensor or a Lua error, never a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static char path[96];

/* Every reader on the same bytes, each under pcall: a malformed file must give
 * an error message, and what a reader accepts must have the size it claims. */
static const char script[] =
	"local m = require('matorage')\n"
	"local p = arg.path\n"
	"local ok, t = pcall(m.read_idx, p)\n"
	"if ok then assert(#t:bytes() == t:numel() * ({uint8=1, int8=1, int16=2, int32=4,\n"
	"  float32=4, float64=8})[t:dtype()]) else assert(type(t) == 'string') end\n"
	"local ok2, c, names = pcall(m.read_csv, p)\n"
	"if ok2 then assert(#names == (c:shape())[2]) else assert(type(c) == 'string') end\n"
	"ok2, c = pcall(m.read_csv, p, {header = false, fill = 0, delimiter = ';'})\n"
	"if not ok2 then assert(type(c) == 'string') end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		/* In the working directory, which fuzz-smoke.sh removes afterwards. */
		snprintf(dir, sizeof dir, "mt-fuzz-readers.XXXXXX");
		if (!mkdtemp(dir))
			abort();
		snprintf(path, sizeof path, "%s/input", dir);
	}
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	const char *allowed[] = {dir};
	char arg[128];
	snprintf(arg, sizeof arg, "path=%s", path);
	const char *args[] = {arg};
	mt_script_opts o;
	mt_script_opts_init(&o);
	o.allowed_paths = allowed;
	o.nallowed = 1;
	o.max_memory = 256u << 20; /* an IDX header may promise gigabytes */
	mt_script *s = NULL;
	mt_error err;
	if (mt_script_open(&o, &s, &err))
		abort();
	int rc = mt_script_run(s, "fuzz.lua", script, sizeof script - 1, args, 1, &err);
	/* Only the readers' own refusals are expected: an assert in the script
	 * failing (a reader accepted bytes it should not have) is a bug. */
	if (rc && rc != MT_ERANGE && rc != MT_ENOMEM)
		abort();
	mt_script_close(s);
	return 0;
}
