/* store-fs.c — the local-directory store: keys are relative paths, writes go to a temporary file then rename. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store.h"

#define TMP_PREFIX ".tmp."
#define PAGE_DEFAULT 1000

typedef struct fs_store {
	mt_store base;
	char *root;
} fs_store;

struct mt_upload {
	fs_store *s;
	char *key;
	char *path, *tmp;
	int fd;
	int flags;
};

static atomic_uint tmp_serial;

static int errno_code(int e)
{
	return e == ENOENT || e == ENOTDIR ? MT_ENOTFOUND : e == EACCES || e == EPERM ? MT_EAUTH
			     : e == ENOMEM ? MT_ENOMEM : MT_EIO;
}

static int fs_fail(fs_store *s, const char *key, const char *what, int e, mt_error *err)
{
	return mt_err(err, errno_code(e), "%s: %s: %s%s%s", s->base.url, key, what ? what : "",
		      what ? ": " : "", strerror(e));
}

static int key_ok(fs_store *s, const char *key, mt_error *err)
{
	if (!key || !*key || key[0] == '/' || strstr(key, "//") || strstr(key, "..") ||
	    key[strlen(key) - 1] == '/')
		return mt_err(err, MT_EINVAL, "%s: invalid object key '%s'", s->base.url,
			      key ? key : "");
	return 0;
}

static char *key_path(fs_store *s, const char *key)
{
	return mt_asprintf("%s/%s", s->root, key);
}

static int fs_get(mt_store *st, const char *key, uint64_t offset, uint64_t len, void **data,
		  size_t *got, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = key_ok(s, key, err);
	if (rc)
		return rc;
	char *path = key_path(s, key);
	if (!path)
		return mt_err(err, MT_ENOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0) {
		rc = fs_fail(s, key, NULL, errno, err);
		if (fd >= 0)
			close(fd);
		return rc;
	}
	uint64_t size = (uint64_t)sb.st_size;
	if (offset > size || (len != UINT64_MAX && (offset + len < offset || offset + len > size))) {
		close(fd);
		return mt_err(err, MT_ERANGE, "%s: %s: bytes %llu+%llu are past its end (%llu)",
			      s->base.url, key, (unsigned long long)offset,
			      (unsigned long long)len, (unsigned long long)size);
	}
	if (len == UINT64_MAX)
		len = size - offset;
	void *buf = malloc(len ? (size_t)len : 1);
	if (!buf) {
		close(fd);
		return mt_err(err, MT_ENOMEM, "%s: out of memory for %llu bytes", key,
			      (unsigned long long)len);
	}
	rc = st->ops->read(st, key, offset, buf, (size_t)len, err);
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*data = buf;
	*got = (size_t)len;
	return 0;
}

static int fs_read(mt_store *st, const char *key, uint64_t offset, void *buf, size_t len,
		   mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = key_ok(s, key, err);
	if (rc)
		return rc;
	char *path = key_path(s, key);
	if (!path)
		return mt_err(err, MT_ENOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return fs_fail(s, key, NULL, errno, err);
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = fs_fail(s, key, "read", errno, err);
			break;
		}
		if (n == 0) {
			rc = mt_err(err, MT_ERANGE, "%s: %s: bytes %llu+%zu are past its end",
				    s->base.url, key, (unsigned long long)offset, len);
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	return rc;
}

static int mkdirs_for(fs_store *s, const char *path, const char *key, mt_error *err)
{
	char *p = mt_strdup(path);
	if (!p)
		return mt_err(err, MT_ENOMEM, "out of memory");
	for (char *c = p + strlen(s->root) + 1; (c = strchr(c, '/')); c++) {
		*c = '\0';
		if (mkdir(p, 0777) != 0 && errno != EEXIST) {
			int e = errno;
			free(p);
			return fs_fail(s, key, "mkdir", e, err);
		}
		*c = '/';
	}
	free(p);
	return 0;
}

static void fsync_dir_of(const char *path)
{
	char *d = mt_strdup(path);
	char *slash = d ? strrchr(d, '/') : NULL;
	if (slash) {
		*slash = '\0';
		int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(d);
}

static int fs_upload_open(mt_store *st, const char *key, int flags, mt_upload **out,
			  mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = key_ok(s, key, err);
	if (rc)
		return rc;
	mt_upload *u = calloc(1, sizeof *u);
	if (!u)
		return mt_err(err, MT_ENOMEM, "out of memory");
	u->s = s;
	u->fd = -1;
	u->flags = flags;
	u->key = mt_strdup(key);
	u->path = key_path(s, key);
	const char *base = strrchr(key, '/');
	base = base ? base + 1 : key;
	char *dir = u->path ? strndup(u->path, strlen(u->path) - strlen(base)) : NULL;
	if (dir)
		u->tmp = mt_asprintf("%s" TMP_PREFIX "%s.%ld.%u", dir, base, (long)getpid(),
				     atomic_fetch_add(&tmp_serial, 1));
	free(dir);
	if (!u->key || !u->path || !u->tmp) {
		st->ops->upload_abort(u);
		return mt_err(err, MT_ENOMEM, "out of memory");
	}
	if ((rc = mkdirs_for(s, u->path, key, err))) {
		st->ops->upload_abort(u);
		return rc;
	}
	u->fd = open(u->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (u->fd < 0) {
		rc = fs_fail(s, key, "create", errno, err);
		st->ops->upload_abort(u);
		return rc;
	}
	*out = u;
	return 0;
}

static int fs_upload_write(mt_upload *u, const void *data, size_t len, mt_error *err)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(u->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fs_fail(u->s, u->key, "write", errno, err);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void fs_upload_abort(mt_upload *u)
{
	if (!u)
		return;
	if (u->fd >= 0) {
		close(u->fd);
		unlink(u->tmp);
	}
	free(u->key);
	free(u->path);
	free(u->tmp);
	free(u);
}

/* fsync, then publish: rename, or link(2) so an existing key is never
 * replaced (exclusive puts: manifests). */
static int fs_upload_commit(mt_upload *u, mt_error *err)
{
	int rc = 0;
	int sync = !(u->flags & MT_PUT_NOSYNC);
	if (sync && fsync(u->fd) != 0)
		rc = fs_fail(u->s, u->key, "fsync", errno, err);
	if (!rc && (u->flags & MT_PUT_EXCLUSIVE)) {
		if (link(u->tmp, u->path) != 0)
			rc = errno == EEXIST
				     ? mt_err(err, MT_EEXIST, "%s: %s already exists", u->s->base.url,
					      u->key)
				     : fs_fail(u->s, u->key, "link", errno, err);
	} else if (!rc && rename(u->tmp, u->path) != 0) {
		rc = fs_fail(u->s, u->key, "rename", errno, err);
	}
	if (!rc && sync)
		fsync_dir_of(u->path);
	close(u->fd);
	if (rc || (u->flags & MT_PUT_EXCLUSIVE))
		unlink(u->tmp);
	u->fd = -1;
	fs_upload_abort(u);
	return rc;
}

static int fs_put(mt_store *st, const char *key, const void *data, size_t len, int flags,
		  mt_error *err)
{
	mt_upload *u;
	int rc = st->ops->upload_open(st, key, flags, &u, err);
	if (rc)
		return rc;
	if ((rc = st->ops->upload_write(u, data, len, err))) {
		st->ops->upload_abort(u);
		return rc;
	}
	return st->ops->upload_commit(u, err);
}

static int fs_head(mt_store *st, const char *key, uint64_t *size, int64_t *mtime, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = key_ok(s, key, err);
	if (rc)
		return rc;
	char *path = key_path(s, key);
	if (!path)
		return mt_err(err, MT_ENOMEM, "out of memory");
	struct stat sb;
	rc = stat(path, &sb) != 0 ? fs_fail(s, key, NULL, errno, err)
	     : !S_ISREG(sb.st_mode) ? mt_err(err, MT_ENOTFOUND, "%s: %s is not an object",
					     s->base.url, key)
				    : 0;
	free(path);
	if (!rc) {
		*size = (uint64_t)sb.st_size;
		*mtime = (int64_t)sb.st_mtime;
	}
	return rc;
}

/* ---- listing: a sorted walk of the tree below the prefix's directory ---- */

struct walk {
	fs_store *s;
	const char *prefix;
	const char *after; /* continuation token: the last key returned */
	size_t max;
	mt_list_page *page;
	size_t cap;
	int temps;         /* sweep: visit temporary files instead of objects */
	int64_t before;
	int dry_run;
	uint64_t n, bytes;
};

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int walk_add(struct walk *w, const char *key, const struct stat *sb)
{
	mt_list_page *p = w->page;
	if (p->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		mt_obj *o = realloc(p->objs, cap * sizeof *o);
		if (!o)
			return MT_ENOMEM;
		p->objs = o;
		w->cap = cap;
	}
	if (!(p->objs[p->n].key = mt_strdup(key)))
		return MT_ENOMEM;
	p->objs[p->n].size = (uint64_t)sb->st_size;
	p->objs[p->n].mtime = (int64_t)sb->st_mtime;
	p->n++;
	return 0;
}

/* Visit dir (key prefix `rel`, "" or ending in '/') in key order.  Keys
 * order as byte strings, and "a/" sorts after "a-b", so entries are sorted
 * by name with a '/' appended to directories. */
static int walk_dir(struct walk *w, const char *rel, mt_error *err)
{
	char *dirpath = *rel ? mt_asprintf("%s/%s", w->s->root, rel) : mt_strdup(w->s->root);
	if (!dirpath)
		return mt_err(err, MT_ENOMEM, "out of memory");
	DIR *d = opendir(dirpath);
	if (!d) {
		int e = errno;
		free(dirpath);
		return e == ENOENT || e == ENOTDIR ? 0 : fs_fail(w->s, rel, "list", e, err);
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	struct dirent *de;
	while (!rc && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char *full = mt_asprintf("%s/%s", dirpath, de->d_name);
		struct stat sb;
		if (!full) {
			rc = MT_ENOMEM;
			break;
		}
		int st = lstat(full, &sb);
		free(full);
		if (st != 0 || !(S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode)))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nn = realloc(names, cap * sizeof *nn);
			if (!nn) {
				rc = MT_ENOMEM;
				break;
			}
			names = nn;
		}
		names[n] = mt_asprintf("%s%s%s", rel, de->d_name, S_ISDIR(sb.st_mode) ? "/" : "");
		if (!names[n]) {
			rc = MT_ENOMEM;
			break;
		}
		n++;
	}
	closedir(d);
	free(dirpath);
	if (n)
		qsort(names, n, sizeof *names, name_cmp);
	size_t plen = strlen(w->prefix);
	for (size_t i = 0; !rc && i < n; i++) {
		const char *k = names[i];
		size_t klen = strlen(k);
		int is_dir = k[klen - 1] == '/';
		/* Prune subtrees that cannot match the prefix or lie before the token. */
		size_t cmp = klen < plen ? klen : plen;
		if (strncmp(k, w->prefix, cmp) != 0)
			continue;
		if (is_dir) {
			if (w->after && strncmp(k, w->after, klen) != 0 && strcmp(k, w->after) < 0)
				continue;
			rc = walk_dir(w, k, err);
			if (rc == 1)
				break;
			continue;
		}
		if (klen < plen)
			continue;
		const char *base = strrchr(k, '/');
		base = base ? base + 1 : k;
		int is_tmp = strncmp(base, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
		char *full = mt_asprintf("%s/%s", w->s->root, k);
		struct stat sb;
		if (!full) {
			rc = MT_ENOMEM;
			break;
		}
		if (stat(full, &sb) != 0) {
			free(full);
			continue;
		}
		if (w->temps) {
			if (is_tmp && (int64_t)sb.st_mtime < w->before) {
				w->n++;
				w->bytes += (uint64_t)sb.st_size;
				if (!w->dry_run && unlink(full) != 0 && errno != ENOENT)
					rc = fs_fail(w->s, k, "unlink", errno, err);
			}
		} else if (!is_tmp && (!w->after || strcmp(k, w->after) > 0)) {
			if (w->page->n == w->max) {
				/* One more than a page: there is a next page. */
				rc = 1;
			} else if (walk_add(w, k, &sb)) {
				rc = MT_ENOMEM;
			}
		}
		free(full);
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (rc == MT_ENOMEM)
		return mt_err(err, rc, "%s: listing %s: out of memory", w->s->base.url, w->prefix);
	return rc;
}

/* Start the walk at the deepest directory the prefix names. */
static char *prefix_dir(const char *prefix)
{
	const char *slash = strrchr(prefix, '/');
	return slash ? strndup(prefix, (size_t)(slash - prefix + 1)) : mt_strdup("");
}

static int fs_list(mt_store *st, const char *prefix, const char *token, size_t max,
		   mt_list_page *page, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	*page = (mt_list_page){0};
	struct walk w = {.s = s, .prefix = prefix, .after = token, .max = max ? max : PAGE_DEFAULT,
			 .page = page};
	char *dir = prefix_dir(prefix);
	if (!dir)
		return mt_err(err, MT_ENOMEM, "out of memory");
	int rc = walk_dir(&w, dir, err);
	free(dir);
	if (rc == 1) {
		rc = 0;
		if (!(page->next = mt_strdup(page->objs[page->n - 1].key)))
			rc = mt_err(err, MT_ENOMEM, "out of memory");
	}
	if (rc)
		mt_list_page_free(page);
	return rc;
}

static int fs_list_prefixes(mt_store *st, const char *prefix, const char *token, size_t max,
			    mt_list_page *page, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	*page = (mt_list_page){0};
	char *rel = prefix_dir(prefix);
	char *path = rel ? mt_asprintf("%s/%s", s->root, rel) : NULL;
	DIR *d = path ? opendir(path) : NULL;
	int rc = !path ? mt_err(err, MT_ENOMEM, "out of memory")
		 : !d && errno != ENOENT && errno != ENOTDIR ? fs_fail(s, prefix, "list", errno, err)
							     : 0;
	char **names = NULL;
	size_t n = 0, cap = 0;
	for (struct dirent *de; !rc && d && (de = readdir(d));) {
		char *key = mt_asprintf("%s%s/", rel, de->d_name);
		char *full = key ? mt_asprintf("%s/%s", s->root, key) : NULL;
		struct stat sb;
		int keep = full && de->d_name[0] != '.' && strncmp(key, prefix, strlen(prefix)) == 0 &&
			   (!token || strcmp(key, token) > 0) && lstat(full, &sb) == 0 &&
			   S_ISDIR(sb.st_mode);
		free(full);
		if (!key || (keep && n == cap && !(names = realloc(names, (cap = cap ? 2 * cap : 32) *
								       sizeof *names)))) {
			free(key);
			rc = mt_err(err, MT_ENOMEM, "out of memory");
			break;
		}
		if (keep)
			names[n++] = key;
		else
			free(key);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(names, n, sizeof *names, name_cmp);
	size_t take = max ? max : PAGE_DEFAULT;
	if (!rc && n)
		rc = (page->objs = calloc(n < take ? n : take, sizeof *page->objs))
			     ? 0 : mt_err(err, MT_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!rc && i < take)
			page->objs[page->n++].key = names[i];
		else
			free(names[i]);
	}
	if (!rc && n > take && !(page->next = mt_strdup(page->objs[take - 1].key)))
		rc = mt_err(err, MT_ENOMEM, "out of memory");
	free(names);
	free(path);
	free(rel);
	if (rc)
		mt_list_page_free(page);
	return rc;
}

static int fs_sweep(mt_store *st, const char *prefix, int64_t before, int dry_run, uint64_t *n,
		    uint64_t *bytes, mt_error *err)
{
	mt_list_page unused = {0};
	struct walk w = {.s = (fs_store *)st, .prefix = prefix, .page = &unused, .temps = 1,
			 .before = before, .dry_run = dry_run};
	char *dir = prefix_dir(prefix);
	if (!dir)
		return mt_err(err, MT_ENOMEM, "out of memory");
	int rc = walk_dir(&w, dir, err);
	free(dir);
	*n = w.n;
	*bytes = w.bytes;
	return rc;
}

static int fs_del(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	for (size_t i = 0; i < n; i++) {
		int rc = key_ok(s, keys[i], err);
		char *path = rc ? NULL : key_path(s, keys[i]);
		if (rc)
			return rc;
		if (!path)
			return mt_err(err, MT_ENOMEM, "out of memory");
		if (unlink(path) != 0 && errno != ENOENT) {
			rc = fs_fail(s, keys[i], "delete", errno, err);
			free(path);
			return rc;
		}
		free(path);
	}
	return 0;
}

static int fs_sync(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		char *path = (rc = key_ok(s, keys[i], err)) ? NULL : key_path(s, keys[i]);
		if (!rc && !path)
			rc = mt_err(err, MT_ENOMEM, "out of memory");
		int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
		if (path && (fd < 0 || fsync(fd) != 0))
			rc = fs_fail(s, keys[i], "fsync", errno, err);
		if (fd >= 0)
			close(fd);
		/* Objects of one writer share a directory: flush it once. */
		const char *prev = i ? strrchr(keys[i - 1], '/') : NULL;
		const char *cur = strrchr(keys[i], '/');
		if (!rc && (!i || !prev || !cur || prev - keys[i - 1] != cur - keys[i] ||
			    strncmp(keys[i - 1], keys[i], (size_t)(cur - keys[i])) != 0))
			fsync_dir_of(path);
		free(path);
	}
	return rc;
}

static void fs_close(mt_store *st)
{
	fs_store *s = (fs_store *)st;
	free(s->root);
	free(s->base.url);
	free(s);
}

static const mt_store_ops fs_ops = {
	.scheme = "file",
	.get = fs_get,
	.read = fs_read,
	.put = fs_put,
	.upload_open = fs_upload_open,
	.upload_write = fs_upload_write,
	.upload_commit = fs_upload_commit,
	.upload_abort = fs_upload_abort,
	.head = fs_head,
	.list = fs_list,
	.list_prefixes = fs_list_prefixes,
	.del = fs_del,
	.sync = fs_sync,
	.sweep = fs_sweep,
	.close = fs_close,
};

int mt_store_fs_open(const char *root, mt_store **out, mt_error *err)
{
	struct stat sb;
	if (stat(root, &sb) != 0 && mkdir(root, 0777) != 0)
		return mt_err(err, errno_code(errno), "store file://%s: %s", root, strerror(errno));
	if (stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return mt_err(err, MT_EINVAL, "store file://%s: not a directory", root);
	fs_store *s = calloc(1, sizeof *s);
	if (!s)
		return mt_err(err, MT_ENOMEM, "out of memory");
	s->base.ops = &fs_ops;
	s->root = mt_strdup(root);
	s->base.url = mt_asprintf("file://%s", root);
	if (!s->root || !s->base.url) {
		fs_close(&s->base);
		return mt_err(err, MT_ENOMEM, "out of memory");
	}
	*out = &s->base;
	return 0;
}
