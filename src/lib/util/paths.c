/* paths.c — where matorage keeps its files by default: the XDG base directories and the home directory, resolved in one place. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include "util.h"

/* The home directory into buf: $HOME when set and not empty, else the
 * user's entry in the password database (services and containers often run
 * without HOME).  `var` is the XDG variable the error suggests instead. */
static int path_home(char *buf, size_t cap, const char *var, mt_error *err)
{
	const char *h = getenv("HOME");
	if (h && *h) {
		if ((size_t)snprintf(buf, cap, "%s", h) >= cap)
			return mti_err(err, MT_ERANGE, "HOME is longer than %zu bytes", cap - 1);
		return 0;
	}
	struct passwd pw, *found = NULL;
	char scratch[4096];
	if (getpwuid_r(getuid(), &pw, scratch, sizeof scratch, &found) == 0 && found &&
	    found->pw_dir && found->pw_dir[0] == '/' &&
	    (size_t)snprintf(buf, cap, "%s", found->pw_dir) < cap)
		return 0;
	return mti_err(err, MT_EINVAL,
		      "no home directory: HOME is unset and user %u has none in the password "
		      "database; set HOME or %s", (unsigned)getuid(), var);
}

int mti_home_file(const char *var, const char *rel, char **out, mt_error *err)
{
	*out = NULL;
	const char *v = getenv(var);
	if (v && *v) {
		*out = mti_strdup(v);
	} else {
		char home[4096];
		int rc = path_home(home, sizeof home, var, err);
		if (rc)
			return rc;
		*out = mti_asprintf("%s/%s", home, rel);
	}
	return *out ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
}

int mt_user_path(int dir, const char *name, char **out, mt_error *err)
{
	*out = NULL;
	static const char *const vars[] = {"XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"};
	static const char *const rels[] = {".local/share", ".config", ".cache"};
	if (dir < MT_DIR_DATA || dir > MT_DIR_CACHE || !name || !*name)
		return mti_err(err, MT_EINVAL, "user path: no directory kind %d or no name", dir);
	const char *var = vars[dir];
	/* The XDG rules ignore a variable that is not an absolute path. */
	const char *xdg = getenv(var);
	if (xdg && xdg[0] == '/') {
		*out = mti_asprintf("%s/matorage/%s", xdg, name);
	} else {
		char home[4096];
		int rc = path_home(home, sizeof home, var, err);
		if (rc)
			return rc;
		*out = mti_asprintf("%s/%s/matorage/%s", home, rels[dir], name);
	}
	return *out ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
}
