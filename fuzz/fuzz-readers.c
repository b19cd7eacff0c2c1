/* fuzz-readers.c — libFuzzer target: the recipe readers (IDX, CSV) must turn any file into a tensor or a Lua error, never a crash. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "script.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* In the working directory (fuzz-smoke.sh and fuzz-explore.sh run each
 * target in a directory of its own).  A fixed name, so that every run sees
 * the same paths, error messages and memory use, and a replay with the same
 * seed takes the same paths through the code. */
static const char dir[] = "mt-fuzz-readers";
static const char path[] = "mt-fuzz-readers/input";
static int made;

/* Every reader on the same bytes, each under pcall: a malformed file must give
 * an error message, and what a reader accepts must have the size it claims and
 * take views, copies, arithmetic and reductions whatever its shape (empty dims
 * beside huge ones included), failing at most for the memory limit. */
static const char script[] =
	"local m = require('matorage')\n"
	"local p = arg.path\n"
	"local function ops(t)\n"
	"  assert(t:reshape({-1}):numel() == t:numel())\n"
	"  local v = t:rank() > 1 and t:transpose(1, t:rank()) or t:flip(1)\n"
	"  local c = v:contiguous()\n"
	"  assert(c:numel() == t:numel())\n"
	"  local same = (c + 0):eq(c):sum()\n"
	"  assert(same == t:numel() or t:dtype():find('float'))  -- NaN is not itself\n"
	"  if t:numel() > 0 then assert(t:max(1):numel() * t:shape()[1] == t:numel()) end\n"
	"end\n"
	"local ok, t = pcall(m.read_idx, p)\n"
	"if ok then assert(#t:bytes() == t:numel() * ({uint8=1, int8=1, int16=2, int32=4,\n"
	"  float32=4, float64=8})[t:dtype()])\n"
	"  local ok3, e = pcall(ops, t)\n"
	"  assert(ok3 or tostring(e):find('memory limit'), e)\n"
	"else assert(type(t) == 'string') end\n"
	"local ok2, c, names = pcall(m.read_csv, p)\n"
	"if ok2 then assert(#names == (c:shape())[2]) else assert(type(c) == 'string') end\n"
	"ok2, c = pcall(m.read_csv, p, {header = false, fill = 0, delimiter = ';'})\n"
	"if not ok2 then assert(type(c) == 'string') end\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!made) {
		if (mkdir(dir, 0700) && errno != EEXIST)
			abort();
		made = 1;
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
	mt_error err = {0};
	if (mt_script_open(&o, &s, &err))
		abort();
	int rc = mt_script_run(s, "fuzz.lua", script, sizeof script - 1, args, 1, &err);
	/* The script catches every reader's error itself, so the one failure to
	 * expect is the memory limit stopping it outside a pcall (the runner
	 * reports the error that ended the run, not one the script caught
	 * before).  Anything else, an assert above first, is a bug: a reader
	 * accepted bytes it should not have. */
	int refused = (rc == MT_ERANGE || rc == MT_ENOMEM) && err.code == rc &&
		      strstr(err.message, "memory") != NULL;
	if (rc && !refused) {
		fprintf(stderr, "fuzz-readers: the script failed (%d): %s\n", rc, err.message);
		abort();
	}
	mt_script_close(s);
	return 0;
}
