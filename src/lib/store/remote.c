/* remote.c — named remotes in matorage's configuration file (JSON), read and rewritten atomically. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

/* $MATORAGE_CONFIG, else config.json in matorage's configuration directory
 * (mt_user_path). */
static int config_path(char **out, mt_error *err)
{
	const char *p = getenv("MATORAGE_CONFIG");
	if (p && *p) {
		*out = mti_strdup(p);
		return *out ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	}
	int rc = mt_user_path(MT_DIR_CONFIG, "config.json", out, err);
	if (rc && rc != MT_ENOMEM)
		mti_err_prefix(err, "configuration: ");
	return rc;
}

/* The whole file as JSON; an absent file is an empty object. */
static int config_load(const char *path, json_t **out, mt_error *err)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f && errno == ENOENT) {
		*out = json_object();
		return *out ? 0 : mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!f)
		return mti_err(err, MT_EIO, "configuration %s: %s", path, strerror(errno));
	/* A directory opens fine and then reads as an empty, broken file. */
	struct stat st;
	if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
		fclose(f);
		return mti_err(err, MT_EIO, "configuration %s: not a regular file", path);
	}
	json_error_t je;
	json_t *root = json_loadf(f, 0, &je);
	fclose(f);
	if (!root)
		return mti_err(err, MT_EFORMAT, "configuration %s: line %d, column %d: %s", path,
			      je.line, je.column, je.text);
	json_t *remotes = json_object_get(root, "remotes");
	if (!json_is_object(root) || (remotes && !json_is_object(remotes))) {
		json_decref(root);
		return mti_err(err, MT_EFORMAT,
			      "configuration %s: expected an object with \"remotes\": {NAME: {...}}",
			      path);
	}
	*out = root;
	return 0;
}

static const char *const addressing_names[] = {"auto", "path", "virtual"};

void mti_remotes_free_one(mt_remote *r)
{
	free(r->name);
	free(r->url);
	free(r->endpoint);
	free(r->region);
	free(r->profile);
	free(r->ca_bundle);
	free(r->parity);
	memset(r, 0, sizeof *r);
}

void mt_remotes_free(mt_remote *r, size_t n)
{
	for (size_t i = 0; r && i < n; i++)
		mti_remotes_free_one(&r[i]);
	free(r);
}

/* One entry of the file into r, every string a copy. */
static int remote_decode(const char *path, const char *name, json_t *e, mt_remote *r,
			 mt_error *err)
{
	memset(r, 0, sizeof *r);
	if (!json_is_object(e))
		return mti_err(err, MT_EFORMAT, "configuration %s: remote %s is not an object", path,
			      name);
	int rc = 0;
	if (!(r->name = mti_strdup(name)))
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	struct {
		const char *key;
		char **slot;
	} strs[] = {{"url", &r->url},         {"endpoint", &r->endpoint}, {"region", &r->region},
		    {"profile", &r->profile}, {"ca_bundle", &r->ca_bundle}, {"parity", &r->parity}};
	for (size_t i = 0; !rc && i < sizeof strs / sizeof *strs; i++) {
		json_t *v = json_object_get(e, strs[i].key);
		if (v && !json_is_string(v))
			rc = mti_err(err, MT_EFORMAT, "configuration %s: remote %s: %s is not a string",
				    path, name, strs[i].key);
		else if (v && !(*strs[i].slot = mti_strdup(json_string_value(v))))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc && !r->url)
		rc = mti_err(err, MT_EFORMAT, "configuration %s: remote %s has no url", path, name);
	json_t *ins = json_object_get(e, "insecure");
	if (!rc && ins && !json_is_boolean(ins))
		rc = mti_err(err, MT_EFORMAT, "configuration %s: remote %s: insecure is not true or "
			    "false", path, name);
	r->insecure = json_is_true(ins);
	json_t *a = json_object_get(e, "addressing");
	if (!rc && a) {
		const char *s = json_is_string(a) ? json_string_value(a) : "";
		int found = -1;
		for (int i = 0; i < 3; i++)
			if (!strcmp(s, addressing_names[i]))
				found = i;
		if (found < 0)
			rc = mti_err(err, MT_EFORMAT, "configuration %s: remote %s: addressing is not "
				    "\"auto\", \"path\" or \"virtual\"", path, name);
		r->addressing = found;
	}
	int k, m;
	mt_error pe;
	if (!rc && r->parity && mt_parity_parse(r->parity, &k, &m, &pe))
		rc = mti_err(err, MT_EFORMAT, "configuration %s: remote %s: %s", path, name,
			    pe.message);
	if (rc)
		mti_remotes_free_one(r);
	return rc;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const mt_remote *)a)->name, ((const mt_remote *)b)->name);
}

int mt_remotes_list(mt_remote **out, size_t *n, mt_error *err)
{
	*out = NULL;
	*n = 0;
	char *path = NULL;
	json_t *root = NULL;
	int rc = config_path(&path, err);
	if (!rc)
		rc = config_load(path, &root, err);
	json_t *remotes = rc ? NULL : json_object_get(root, "remotes");
	size_t count = remotes ? json_object_size(remotes) : 0;
	mt_remote *list = count ? calloc(count, sizeof *list) : NULL;
	if (!rc && count && !list)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	size_t k = 0;
	const char *name;
	json_t *e;
	if (!rc && remotes) {
		json_object_foreach(remotes, name, e) {
			if ((rc = remote_decode(path, name, e, &list[k], err)))
				break;
			k++;
		}
	}
	json_decref(root);
	free(path);
	if (rc) {
		mt_remotes_free(list, k);
		return rc;
	}
	if (k)
		qsort(list, k, sizeof *list, name_cmp);
	*out = list;
	*n = k;
	return 0;
}

int mti_remote_find(const char *name, mt_remote *out, mt_error *err)
{
	memset(out, 0, sizeof *out);
	char *path = NULL;
	json_t *root = NULL;
	int rc = config_path(&path, err);
	if (!rc)
		rc = config_load(path, &root, err);
	json_t *e = rc ? NULL : json_object_get(json_object_get(root, "remotes"), name);
	if (!rc && !e)
		rc = MT_ENOTFOUND;
	if (!rc)
		rc = remote_decode(path, name, e, out, err);
	json_decref(root);
	free(path);
	return rc;
}

/* Write root to path: a private temporary file beside it, flushed, renamed
 * over it, so a crash leaves the old file or the new one. */
static int config_save(const char *path, json_t *root, mt_error *err)
{
	char *tmp = mti_asprintf("%s.XXXXXX", path);
	if (!tmp)
		return mti_err(err, MT_ENOMEM, "out of memory");
	int fd = mkstemp(tmp); /* mode 0600 */
	if (fd < 0) {
		int rc = mti_err(err, MT_EIO, "configuration %s: %s", path, strerror(errno));
		free(tmp);
		return rc;
	}
	char *text = json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS);
	size_t len = text ? strlen(text) : 0;
	int ok = text && write(fd, text, len) == (ssize_t)len && write(fd, "\n", 1) == 1 &&
		 fsync(fd) == 0;
	int e = text ? errno : ENOMEM;
	free(text);
	if (close(fd) != 0 && ok) {
		ok = 0;
		e = errno;
	}
	if (ok && rename(tmp, path) != 0) {
		ok = 0;
		e = errno;
	}
	int rc = 0;
	if (!ok) {
		unlink(tmp);
		rc = mti_err(err, e == ENOMEM ? MT_ENOMEM : MT_EIO, "writing configuration %s: %s",
			    path, strerror(e));
	}
	free(tmp);
	return rc;
}

/* The file a rewrite replaces.  A configuration kept as a symbolic link (to
 * a dotfiles repository) stays one: its target is rewritten instead. */
static char *config_target(const char *path)
{
	struct stat st;
	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
		char *real = realpath(path, NULL);
		if (real)
			return real;
	}
	return mti_strdup(path);
}

/* Lock the directory holding path against another matorage editing the same
 * file, so that two `remote add` at once both land; returns the directory's
 * descriptor (also used to flush the rename), -1 when it cannot be opened.
 * The lock is advisory and best effort: where the file system has no locks
 * the edit goes ahead as it would without one. */
static int config_lock(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? mti_asprintf("%.*s", (int)(slash - path), path) : mti_strdup(".");
	int fd = dir ? open(*dir ? dir : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	free(dir);
	if (fd >= 0)
		while (flock(fd, LOCK_EX) != 0 && errno == EINTR)
			;
	return fd;
}

static int remote_check(const mt_remote *r, mt_error *err)
{
	int rc = mt_name_check(r->name, "remote", err);
	if (rc)
		return rc;
	size_t off, len;
	const char *secret = mti_url_userinfo(r->url, &off, &len) ? "URL"
			     : mti_url_userinfo(r->endpoint, &off, &len) ? "endpoint" : NULL;
	if (secret)
		return mti_err(err, MT_EINVAL, "remote %s: the %s holds credentials (user:password@), "
			      "which are never stored: give them with an AWS profile (--profile, "
			      "~/.aws/credentials) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY",
			      r->name, secret);
	const char *u = r->url ? r->url : "";
	int s3 = !strncmp(u, "s3://", 5), file = !strncmp(u, "file:///", 8);
	if ((!s3 && !file) || (s3 && (u[5] == '\0' || u[5] == '/')))
		return mti_err(err, MT_EINVAL,
			      "remote %s: URL '%s' is not s3://BUCKET[/PREFIX] or file:///PATH",
			      r->name, u);
	if (r->endpoint && strncmp(r->endpoint, "http://", 7) && strncmp(r->endpoint, "https://", 8))
		return mti_err(err, MT_EINVAL, "remote %s: endpoint '%s' is not http(s)://HOST[:PORT]",
			      r->name, r->endpoint);
	if (r->addressing < MT_S3_AUTO || r->addressing > MT_S3_VIRTUAL)
		return mti_err(err, MT_EINVAL, "remote %s: addressing %d is not MT_S3_AUTO, "
			      "MT_S3_PATH or MT_S3_VIRTUAL", r->name, r->addressing);
	int k, m;
	if (r->parity && *r->parity && (rc = mt_parity_parse(r->parity, &k, &m, err)))
		return mti_err_prefix(err, "remote %s: ", r->name);
	return 0;
}

/* Lock, load, let edit() change the "remotes" object, save.  Readers take
 * no lock: they see the old file or the new one, never half of one. */
static int config_edit(int (*edit)(json_t *remotes, const void *arg, const char *path,
				   mt_error *err),
		       const void *arg, mt_error *err)
{
	char *name = NULL;
	int rc = config_path(&name, err);
	if (rc)
		return rc;
	char *path = config_target(name);
	free(name);
	if (!path)
		return mti_err(err, MT_ENOMEM, "out of memory");
	rc = mti_mkdir_parent(path, "configuration directory", err);
	int dfd = rc ? -1 : config_lock(path);
	json_t *root = NULL;
	if (!rc)
		rc = config_load(path, &root, err);
	json_t *remotes = rc ? NULL : json_object_get(root, "remotes");
	if (!rc && !remotes) {
		remotes = json_object();
		if (!remotes || json_object_set_new(root, "remotes", remotes))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = edit(remotes, arg, path, err);
	if (!rc)
		rc = config_save(path, root, err);
	/* The rename is durable once the directory is. */
	if (!rc && dfd >= 0)
		fsync(dfd);
	if (dfd >= 0)
		close(dfd);
	json_decref(root);
	free(path);
	return rc;
}

typedef struct add_arg {
	const mt_remote *r;
	int replace;
} add_arg;

static int edit_add(json_t *remotes, const void *arg, const char *path, mt_error *err)
{
	const add_arg *a = arg;
	const mt_remote *r = a->r;
	json_t *old = json_object_get(remotes, r->name);
	if (old && !a->replace)
		return mti_err(err, MT_EEXIST, "remote %s already exists (in %s)", r->name, path);
	/* Keep fields this version does not know about. */
	json_t *e = json_is_object(old) ? json_deep_copy(old) : json_object();
	int bad = !e;
	const char *keys[] = {"url", "endpoint", "region", "profile", "ca_bundle", "parity"};
	const char *vals[] = {r->url, r->endpoint, r->region, r->profile, r->ca_bundle, r->parity};
	for (size_t i = 0; !bad && i < sizeof keys / sizeof *keys; i++)
		bad = vals[i] && *vals[i] ? json_object_set_new(e, keys[i], json_string(vals[i]))
					  : (json_object_del(e, keys[i]), 0);
	if (!bad)
		bad = r->insecure ? json_object_set_new(e, "insecure", json_true())
				  : (json_object_del(e, "insecure"), 0);
	if (!bad)
		bad = r->addressing ? json_object_set_new(e, "addressing",
							  json_string(addressing_names[r->addressing]))
				    : (json_object_del(e, "addressing"), 0);
	if (bad || json_object_set_new(remotes, r->name, e)) {
		if (bad)
			json_decref(e);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	return 0;
}

int mt_remote_add(const mt_remote *r, int replace, mt_error *err)
{
	int rc = remote_check(r, err);
	if (rc)
		return rc;
	add_arg a = {r, replace};
	return config_edit(edit_add, &a, err);
}

static int edit_remove(json_t *remotes, const void *arg, const char *path, mt_error *err)
{
	const char *name = arg;
	if (json_object_del(remotes, name) != 0)
		return mti_err(err, MT_ENOTFOUND, "no remote named %s (in %s)", name, path);
	return 0;
}

int mt_remote_remove(const char *name, mt_error *err)
{
	if (!name || !*name)
		return mti_err(err, MT_EINVAL, "remote name is empty");
	return config_edit(edit_remove, name, err);
}
