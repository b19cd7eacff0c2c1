/* store-fs.c — the local-directory store: keys are relative paths, writes are temp file+rename. */
#define _GNU_SOURCE /* sync_file_range */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef SYS_openat2
#include <linux/openat2.h>
#endif

#include "store.h"

#define TMP_PREFIX ".tmp."
#define PAGE_DEFAULT 1000
#define KEY_MAX 1024 /* S3's limit, so keys stay portable between backends */

typedef struct fs_store {
	mt_store base;
	char *root;
	atomic_int rootfd;         /* -1 until the root exists (a store opened with create -1) */
	pthread_mutex_t lock;      /* guards cache */
	struct fs_dircache *cache; /* see fs_scan */
} fs_store;

struct mt_upload {
	fs_store *s;
	char *key;
	const char *base; /* the key's last segment, inside key */
	char *tmp;        /* the temporary file's name in dirfd */
	int dirfd, fd;
	int flags;
};

static atomic_uint fs_tmp_serial;

/* Reads report a missing object as not found; for a write, a missing
 * directory is an I/O failure of the store itself. */
static int fs_errno_code(int e, int reading)
{
	switch (e) {
	case ENOENT:
	case ENOTDIR:
		return reading ? MT_ENOTFOUND : MT_EIO;
	case EACCES:
	case EPERM:
		return MT_EAUTH;
	case ENOMEM:
		return MT_ENOMEM;
	case ELOOP:
	case EXDEV:
	case ENXIO:
		return MT_ECORRUPT;
	default:
		return MT_EIO;
	}
}

/* What a store's own resolution refused, said in the store's words. */
static const char *fs_strerror(int e)
{
	switch (e) {
	case ELOOP:
	case EXDEV:
		return "a symbolic link on the way (the file store follows none below its root)";
	case ENXIO:
		return "not a regular file";
	default:
		return strerror(e);
	}
}

static int fs_fail(fs_store *s, const char *key, const char *what, int e, int reading,
		   mt_error *err)
{
	return mti_err(err, fs_errno_code(e, reading), "store %s: %s: %s%s%s", s->base.url, key,
		      what ? what : "", what ? ": " : "", fs_strerror(e));
}

static int fs_nomem(fs_store *s, const char *key, mt_error *err)
{
	return mti_err(err, MT_ENOMEM, "store %s: %s: out of memory", s->base.url, key);
}

static int fs_is_tmp(const char *key)
{
	const char *base = strrchr(key, '/');
	return strncmp(base ? base + 1 : key, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;
}

/* A key names a file below the root and nothing else: no way out of the
 * root, no aliases of another key, no clash with temporary files. */
static int fs_key_check(fs_store *s, const char *key, mt_error *err)
{
	const char *why = NULL;
	size_t n = key ? strlen(key) : 0;
	if (n == 0)
		why = "empty";
	else if (n > KEY_MAX)
		why = "longer than 1024 bytes";
	else if (key[0] == '/')
		why = "absolute";
	else if (key[n - 1] == '/')
		why = "ends with '/'";
	else if (strstr(key, "//"))
		why = "holds an empty segment";
	else if (strstr(key, ".."))
		why = "holds '..'";
	else if (strcmp(key, ".") == 0 || strncmp(key, "./", 2) == 0 || strstr(key, "/./") ||
		 (n >= 2 && strcmp(key + n - 2, "/.") == 0))
		why = "holds a '.' segment";
	else if (fs_is_tmp(key))
		why = "uses the temporary-file prefix " TMP_PREFIX;
	if (why)
		return mti_err(err, MT_EINVAL, "store %s: invalid object key '%.200s': %s",
			      s->base.url, key ? key : "", why);
	return 0;
}

/* ---- resolution beneath the root ----------------------------------------
 * Every object, directory and temporary file is reached from the root's
 * descriptor one segment at a time, following no symbolic link: a link
 * (planted in a shared directory, or left by hand) can neither make a read
 * return a file from elsewhere nor make a delete or a write land outside
 * the store.  The root itself is resolved once, when the store opens.
 * Functions here return a descriptor, or a negative errno value. */

static atomic_int fs_no_openat2; /* the kernel has no openat2(2) */

/* The root's descriptor; a store opened before its root existed looks again. */
static int fs_root(fs_store *s)
{
	int fd = atomic_load(&s->rootfd);
	if (fd >= 0)
		return fd;
	fd = open(*s->root ? s->root : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int none = -1;
	if (!atomic_compare_exchange_strong(&s->rootfd, &none, fd)) {
		close(fd);
		fd = none;
	}
	return fd;
}

/* One segment below dir, a directory, made first when missing and mk. */
static int fs_subdir(int dir, const char *name, int mk)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && mk && (mkdirat(dir, name, 0777) == 0 || errno == EEXIST))
		fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* rel ("" for the root; segments of a checked key, a trailing '/' allowed)
 * opened with flags, one openat per segment.  With mk the directories on
 * the way are made, and with O_DIRECTORY in flags the last one too. */
static int fs_walk_open(int root, const char *rel, int flags, int mk)
{
	int cur = root;
	const char *seg = rel;
	for (const char *slash; (slash = strchr(seg, '/')); seg = slash + 1) {
		char name[NAME_MAX + 1];
		size_t n = (size_t)(slash - seg);
		int next = n > NAME_MAX ? -ENAMETOOLONG : 0;
		if (!next) {
			memcpy(name, seg, n);
			name[n] = '\0';
			next = fs_subdir(cur, name, mk);
		}
		if (cur != root)
			close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	int fd = (flags & O_DIRECTORY) && *seg ? fs_subdir(cur, seg, mk)
		 : openat(cur, *seg ? seg : ".", flags | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && !((flags & O_DIRECTORY) && *seg))
		fd = -errno;
	if (cur != root)
		close(cur);
	return fd;
}

/* rel opened beneath the root, no link followed: openat2(2) in one call
 * where the kernel has it, else segment by segment. */
static int fs_open_beneath(fs_store *s, const char *rel, int flags)
{
	int root = fs_root(s);
	if (root < 0)
		return root;
#ifdef SYS_openat2
	if (!atomic_load_explicit(&fs_no_openat2, memory_order_relaxed)) {
		struct open_how how = {
			.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC),
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
		};
		long fd = syscall(SYS_openat2, root, *rel ? rel : ".", &how, sizeof how);
		if (fd >= 0)
			return (int)fd;
		/* A sandbox's filter may answer EPERM for a call it does not know. */
		if (errno != ENOSYS && errno != EPERM)
			return -errno;
		if (errno == ENOSYS)
			atomic_store(&fs_no_openat2, 1);
	}
#endif
	return fs_walk_open(root, rel, flags, 0);
}

/* The directory holding key, made when missing and mk; *base: key's last
 * segment. */
static int fs_open_parent(fs_store *s, const char *key, int mk, const char **base)
{
	const char *slash = strrchr(key, '/');
	*base = slash ? slash + 1 : key;
	char *dir = strndup(key, slash ? (size_t)(slash - key) : 0);
	if (!dir)
		return -ENOMEM;
	int fd = fs_open_beneath(s, dir, O_RDONLY | O_DIRECTORY);
	/* A delete that empties a directory removes it (fs_prune), maybe
	 * between this walk's mkdir and its open, or the directory above
	 * under the walk: walked again, each time from the root. */
	for (int tries = 0; fd == -ENOENT && mk && tries < 16; tries++) {
		int root = fs_root(s);
		fd = root < 0 ? root : fs_walk_open(root, dir, O_RDONLY | O_DIRECTORY, 1);
	}
	free(dir);
	return fd;
}

/* Flush the directory holding key, so that a rename or link in it
 * survives a crash. */
static void fs_sync_parent(fs_store *s, const char *key)
{
	const char *base;
	int fd = fs_open_parent(s, key, 0, &base);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* What an object's file is when it is not one: refused by name, so that a
 * FIFO or a device planted at a key cannot stall a reader. */
static int fs_not_regular(fs_store *s, const char *key, mode_t mode, mt_error *err)
{
	if (S_ISDIR(mode))
		return mti_err(err, MT_ENOTFOUND, "store %s: %s: not an object", s->base.url, key);
	const char *what = S_ISFIFO(mode) ? "a FIFO" : S_ISLNK(mode) ? "a symbolic link"
			   : S_ISSOCK(mode) ? "a socket" : "a device";
	return mti_err(err, MT_ECORRUPT, "store %s: %s: %s, not a regular file: refused",
		      s->base.url, key, what);
}

/* Open a key for reading; fails unless it is a regular file.  O_NONBLOCK
 * keeps the open of a FIFO from waiting for a writer; it is cleared once
 * the file is known to be regular. */
static int fs_open_object(fs_store *s, const char *key, int *fd, uint64_t *size,
			  mt_error *err)
{
	int rc = fs_key_check(s, key, err);
	if (rc)
		return rc;
	*fd = fs_open_beneath(s, key, O_RDONLY | O_NONBLOCK);
	struct stat sb;
	if (*fd < 0)
		rc = fs_fail(s, key, NULL, -*fd, 1, err);
	else if (fstat(*fd, &sb) != 0)
		rc = fs_fail(s, key, NULL, errno, 1, err);
	else if (!S_ISREG(sb.st_mode))
		rc = fs_not_regular(s, key, sb.st_mode, err);
	else if (fcntl(*fd, F_SETFL, fcntl(*fd, F_GETFL) & ~O_NONBLOCK) != 0)
		rc = fs_fail(s, key, NULL, errno, 1, err);
	else
		*size = (uint64_t)sb.st_size;
	if (rc && *fd >= 0)
		close(*fd);
	return rc;
}

static int fs_range_check(fs_store *s, const char *key, uint64_t offset, uint64_t len,
			  uint64_t size, mt_error *err)
{
	uint64_t end;
	if (!mti_add_ok(offset, len, &end) || end > size)
		return mti_err(err, MT_ERANGE, "store %s: %s: %llu bytes at offset %llu are past "
			      "its end (%llu bytes)", s->base.url, key, (unsigned long long)len,
			      (unsigned long long)offset, (unsigned long long)size);
	return 0;
}

/* pread exactly len bytes (inside the object), through short reads and
 * signals. */
static int fs_pread_full(fs_store *s, const char *key, int fd, uint64_t offset, void *buf,
			 size_t len, mt_error *err)
{
	for (size_t done = 0; done < len;) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return fs_fail(s, key, "read", errno, 1, err);
		if (n == 0)
			return mti_err(err, MT_ERANGE, "store %s: %s: ends at byte %llu while "
				      "reading %zu bytes at %llu (truncated meanwhile?)",
				      s->base.url, key, (unsigned long long)(offset + done), len,
				      (unsigned long long)offset);
		done += (size_t)n;
	}
	return 0;
}

/* Open a key to read *len bytes at offset (UINT64_MAX: the rest of it, set
 * in *len), the range checked; nothing is left open on failure. */
static int fs_open_range(fs_store *s, const char *key, uint64_t offset, uint64_t *len, int *fd,
			 mt_error *err)
{
	uint64_t size = 0;
	int rc = fs_open_object(s, key, fd, &size, err);
	if (rc)
		return rc;
	if (*len == UINT64_MAX)
		*len = offset <= size ? size - offset : 0;
	if ((rc = fs_range_check(s, key, offset, *len, size, err)))
		close(*fd);
	return rc;
}

static int fs_get(mt_store *st, const char *key, uint64_t offset, uint64_t len, void **data,
		  size_t *got, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int fd, rc = fs_open_range(s, key, offset, &len, &fd, err);
	if (rc)
		return rc;
	void *buf = malloc(len ? (size_t)len : 1);
	rc = buf ? fs_pread_full(s, key, fd, offset, buf, (size_t)len, err) : fs_nomem(s, key, err);
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
	uint64_t want = len; /* a caller's buffer of SIZE_MAX bytes takes the rest */
	int fd, rc = fs_open_range(s, key, offset, &want, &fd, err);
	if (rc)
		return rc;
	rc = fs_pread_full(s, key, fd, offset, buf, (size_t)want, err);
	close(fd);
	return rc;
}

/* preadv/pwritev of the whole list from offset, IOV_MAX entries at a
 * time, short transfers resumed: 0, an errno, or -1 when a read meets the
 * end of the file. */
static int fs_iov_io(int fd, int write, uint64_t offset, const struct iovec *iov, size_t n)
{
	struct iovec cur[IOV_MAX];
	size_t i = 0, skip = 0; /* bytes of iov[i] already done */
	for (;;) {
		while (i < n && iov[i].iov_len == skip) {
			i++;
			skip = 0;
		}
		if (i == n)
			return 0;
		int k = 0;
		for (size_t j = i; j < n && k < IOV_MAX; j++, k++)
			cur[k] = (struct iovec){(char *)iov[j].iov_base + (j == i ? skip : 0),
						iov[j].iov_len - (j == i ? skip : 0)};
		ssize_t got = write ? pwritev(fd, cur, k, (off_t)offset)
				    : preadv(fd, cur, k, (off_t)offset);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return errno;
		if (got == 0)
			return write ? EIO : -1;
		offset += (uint64_t)got;
		for (size_t left = (size_t)got; left;) {
			size_t rem = iov[i].iov_len - skip;
			skip = left < rem ? skip + left : 0;
			i += left >= rem;
			left = left < rem ? 0 : left - rem;
		}
	}
}

static int fs_readv(mt_store *st, const char *key, uint64_t offset, const struct iovec *iov,
		    size_t n, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	uint64_t want = 0;
	for (size_t i = 0; i < n; i++)
		want += iov[i].iov_len;
	int fd, rc = fs_open_range(s, key, offset, &want, &fd, err);
	if (rc)
		return rc;
	int e = fs_iov_io(fd, 0, offset, iov, n);
	close(fd);
	if (e < 0)
		return mti_err(err, MT_ERANGE, "store %s: %s: ended while reading (truncated "
			      "meanwhile?)", s->base.url, key);
	return e ? fs_fail(s, key, "read", e, 1, err) : 0;
}

/* mkdir -p for the directories in path[from..]; path[from - 1] is a '/'
 * of a directory that exists (or the whole path's first '/').  With
 * `last`, the final component is created too. */
static int fs_mkdirs(const char *path, size_t from, int last)
{
	char *p = mti_strdup(path);
	if (!p)
		return ENOMEM;
	int e = 0;
	for (char *c = p + from;; c++) {
		if (*c != '/' && *c != '\0')
			continue;
		char was = *c;
		if (was || last) {
			*c = '\0';
			if (mkdir(p, 0777) != 0 && errno != EEXIST) {
				e = errno;
				break;
			}
			*c = was;
		}
		if (!was)
			break;
	}
	free(p);
	return e;
}

static void fs_upload_abort(mt_upload *u)
{
	if (!u)
		return;
	if (u->fd >= 0) {
		close(u->fd);
		unlinkat(u->dirfd, u->tmp, 0);
	}
	if (u->dirfd >= 0)
		close(u->dirfd);
	free(u->key);
	free(u->tmp);
	free(u);
}

static int fs_upload_open(mt_store *st, const char *key, int flags, mt_upload **out,
			  mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = fs_key_check(s, key, err);
	if (rc)
		return rc;
	mt_upload *u = calloc(1, sizeof *u);
	if (!u)
		return fs_nomem(s, key, err);
	u->s = s;
	u->fd = u->dirfd = -1;
	u->flags = flags;
	if (!(u->key = mti_strdup(key))) {
		fs_upload_abort(u);
		return fs_nomem(s, key, err);
	}
	u->dirfd = fs_open_parent(s, u->key, 1, &u->base);
	int e = u->dirfd < 0 ? -u->dirfd : 0;
	for (int tries = 0; !e && u->fd < 0 && tries < 8; tries++) {
		free(u->tmp);
		/* The key's name is there for people looking at the directory;
		 * it is cut so the temporary name stays under NAME_MAX. */
		u->tmp = mti_asprintf(TMP_PREFIX "%.128s.%ld.%u.%016llx", u->base, (long)getpid(),
				     atomic_fetch_add(&fs_tmp_serial, 1),
				     (unsigned long long)mti_random_u64());
		if (!u->tmp)
			e = ENOMEM;
		else if ((u->fd = openat(u->dirfd, u->tmp,
					 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
					 0666)) < 0 && errno == ENOENT) {
			/* A delete that emptied the directory removed it
			 * meanwhile (fs_prune): made again. */
			close(u->dirfd);
			u->dirfd = fs_open_parent(s, u->key, 1, &u->base);
			e = u->dirfd < 0 ? -u->dirfd : 0;
		} else if (u->fd < 0 && errno != EEXIST) {
			e = errno;
		}
	}
	if (!e && u->fd < 0)
		e = EEXIST;
	if (e) {
		rc = fs_fail(s, key, "create", e, 0, err);
		fs_upload_abort(u);
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
			return fs_fail(u->s, u->key, "write", errno, 0, err);
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* fsync, then publish: rename, or link(2) so an existing key is never
 * replaced (exclusive puts: manifests).  Frees the upload either way. */
static int fs_upload_commit(mt_upload *u, mt_error *err)
{
	fs_store *s = u->s;
	int sync = !(u->flags & MT_PUT_NOSYNC), rc = 0;
	if (sync && fsync(u->fd) != 0)
		rc = fs_fail(s, u->key, "fsync", errno, 0, err);
#ifdef SYNC_FILE_RANGE_WRITE
	/* An object whose flush comes later (the writer's sync of all its
	 * objects) starts on its way to the disk now, while the writer goes on
	 * hashing and writing the next: otherwise the disk idles until that
	 * sync and then the writer waits for all of it.  A hint only. */
	if (!sync)
		(void)sync_file_range(u->fd, 0, 0, SYNC_FILE_RANGE_WRITE);
#endif
	/* NFS reports some write errors only at close. */
	int fd = u->fd;
	u->fd = -1;
	if (close(fd) != 0 && !rc)
		rc = fs_fail(s, u->key, "close", errno, 0, err);
	int exclusive = u->flags & MT_PUT_EXCLUSIVE;
	if (!rc && exclusive && linkat(u->dirfd, u->tmp, u->dirfd, u->base, 0) != 0)
		rc = errno == EEXIST ? mti_err(err, MT_EEXIST, "store %s: %s already exists",
					      s->base.url, u->key)
				     : fs_fail(s, u->key, "link", errno, 0, err);
	else if (!rc && !exclusive && renameat(u->dirfd, u->tmp, u->dirfd, u->base) != 0)
		rc = fs_fail(s, u->key, "rename", errno, 0, err);
	/* After link(2) the temporary name is a second name of the object. */
	if (rc || exclusive)
		unlinkat(u->dirfd, u->tmp, 0);
	if (!rc && sync)
		fsync(u->dirfd);
	fs_upload_abort(u);
	return rc;
}

static int fs_put(mt_store *st, const char *key, const void *data, size_t len, int flags,
		  mt_error *err)
{
	mt_upload *u;
	int rc = fs_upload_open(st, key, flags, &u, err);
	if (rc)
		return rc;
	if ((rc = fs_upload_write(u, data, len, err))) {
		fs_upload_abort(u);
		return rc;
	}
	return fs_upload_commit(u, err);
}

static int fs_putv(mt_store *st, const char *key, const struct iovec *iov, size_t n, int flags,
		   mt_error *err)
{
	mt_upload *u;
	int rc = fs_upload_open(st, key, flags, &u, err);
	if (rc)
		return rc;
	int e = fs_iov_io(u->fd, 1, 0, iov, n);
	if (e) {
		rc = fs_fail(u->s, u->key, "write", e, 0, err);
		fs_upload_abort(u);
		return rc;
	}
	return fs_upload_commit(u, err);
}

/* The metadata of the file at key, never of a link's target: O_PATH opens
 * a FIFO without waiting and a link as itself.  0 or an errno value. */
static int fs_stat_key(fs_store *s, const char *key, struct stat *sb)
{
	int fd = fs_open_beneath(s, key, O_PATH);
	if (fd < 0)
		return -fd;
	int e = fstat(fd, sb) != 0 ? errno : 0;
	close(fd);
	return e;
}

static int fs_head(mt_store *st, const char *key, uint64_t *size, int64_t *mtime, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int rc = fs_key_check(s, key, err);
	if (rc)
		return rc;
	struct stat sb;
	int e = fs_stat_key(s, key, &sb);
	if (e)
		rc = fs_fail(s, key, NULL, e, 1, err);
	else if (!S_ISREG(sb.st_mode))
		rc = fs_not_regular(s, key, sb.st_mode, err);
	if (!rc) {
		if (size)
			*size = (uint64_t)sb.st_size;
		if (mtime)
			*mtime = (int64_t)sb.st_mtime;
	}
	return rc;
}

/* ---- listing: a sorted walk of the tree below the prefix's directory ----
 * Keys sort as byte strings.  A directory's keys all start with its name
 * and a '/', so entries sorted by name with '/' appended to directories
 * come out in key order ("a-b" < "a/x" < "a0"). */

/* What to collect from a walk. */
enum fs_want {
	FS_OBJECTS,  /* list: objects after the token */
	FS_PREFIXES, /* list_prefixes: directories directly below */
	FS_TEMPS,    /* sweep: temporary files */
};

struct fs_ent {
	char *key; /* directories end with '/' */
	int dir;
};

/* A growable array of entries. */
struct fs_ents {
	struct fs_ent *v;
	size_t n, cap;
};

/* The last directory too large for one page, sorted, so that paging
 * through 100 000 shards reads the directory once rather than once per
 * page.  Valid while the directory's inode and mtime are unchanged: a
 * listing is not a snapshot, and an object created within the mtime's
 * granularity (a few ms) of the read may be missed, as it may be missed
 * by a listing that has already passed its name. */
struct fs_dircache {
	char *rel;
	char *prefix;
	enum fs_want want;
	struct stat st;
	struct fs_ents all;
};

struct fs_walk {
	fs_store *s;
	enum fs_want want;
	const char *prefix;
	size_t plen;
	const char *after; /* continuation token: the last key returned */
	size_t max;
	mt_list_page *page;
	size_t cap;
	int more; /* a full page has a successor */
	int64_t before;
	int dry_run;
	uint64_t n, bytes;
};

static int fs_ent_cmp(const void *a, const void *b)
{
	return strcmp(((const struct fs_ent *)a)->key, ((const struct fs_ent *)b)->key);
}

static int fs_ents_push(struct fs_ents *a, const char *key, int dir)
{
	struct fs_ent *v = mti_grow(a->v, a->n, &a->cap, sizeof *v, 64);
	if (!v)
		return MT_ENOMEM;
	a->v = v;
	if (!(a->v[a->n].key = mti_strdup(key)))
		return MT_ENOMEM;
	a->v[a->n++].dir = dir;
	return 0;
}

static void fs_ents_free(struct fs_ents *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i].key);
	free(a->v);
	*a = (struct fs_ents){0};
}

static void fs_dircache_free(struct fs_dircache *c)
{
	if (!c)
		return;
	free(c->rel);
	free(c->prefix);
	fs_ents_free(&c->all);
	free(c);
}

/* Could this entry (`key`, named `name` in its directory) hold or be a
 * key the walk wants, whatever the token?  Decided on the name alone. */
static int fs_walk_keeps(const struct fs_walk *w, const char *key, size_t klen,
			 const char *name, int dir)
{
	if (strncmp(key, w->prefix, klen < w->plen ? klen : w->plen) != 0)
		return 0;
	if (w->want == FS_PREFIXES)
		return dir && name[0] != '.';
	return dir || (klen >= w->plen && fs_is_tmp(key) == (w->want == FS_TEMPS));
}

/* Every entry of the open directory `rel` the walk may want, sorted.
 * Returns 0 or an errno value. */
static int fs_read_dir(struct fs_walk *w, DIR *d, const char *rel, struct fs_ents *all)
{
	mt_buf key = {0};
	size_t rlen = strlen(rel);
	int rc = mti_buf_append(&key, rel, rlen) ? ENOMEM : 0;
	for (struct dirent *de; !rc && (errno = 0, de = readdir(d));) {
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, ".."))
			continue;
		int type = de->d_type;
		if (type == DT_UNKNOWN) {
			struct stat sb;
			type = fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ? DT_UNKNOWN
			       : S_ISDIR(sb.st_mode) ? DT_DIR
			       : S_ISREG(sb.st_mode) ? DT_REG : DT_UNKNOWN;
		}
		/* Symbolic links and special files are not objects. */
		if (type != DT_DIR && type != DT_REG)
			continue;
		int dir = type == DT_DIR;
		key.len = rlen;
		if (mti_buf_append(&key, name, strlen(name)) ||
		    (dir && mti_buf_append(&key, "/", 1)) || mti_buf_append(&key, "", 1) ||
		    (fs_walk_keeps(w, (const char *)key.data, key.len - 1, name, dir) &&
		     fs_ents_push(all, (const char *)key.data, dir)))
			rc = ENOMEM;
	}
	if (!rc)
		rc = errno;
	mti_buf_free(&key);
	if (!rc && all->n)
		qsort(all->v, all->n, sizeof *all->v, fs_ent_cmp);
	return rc;
}

/* Copy the entries after the token that this page can reach: up to
 * `need` that list one key each ("leaves"), and the directories among
 * them.  *rest: entries were left for later pages.  0 or ENOMEM. */
static int fs_slice(const struct fs_walk *w, const struct fs_ents *all, struct fs_ents *out,
		    int *rest)
{
	size_t lo = 0, hi = all->n;
	if (w->after) {
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (strcmp(all->v[mid].key, w->after) <= 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* The directory holding the token has keys after it too. */
		const struct fs_ent *prev = lo ? &all->v[lo - 1] : NULL;
		if (prev && prev->dir && w->want != FS_PREFIXES &&
		    strncmp(prev->key, w->after, strlen(prev->key)) == 0)
			lo--;
	}
	size_t need = w->want == FS_TEMPS ? SIZE_MAX : w->max - w->page->n + 1, leaves = 0;
	*rest = 0;
	for (size_t i = lo; i < all->n; i++) {
		int leaf = all->v[i].dir == (w->want == FS_PREFIXES);
		if (leaf && leaves == need) {
			*rest = 1;
			break;
		}
		leaves += leaf;
		if (fs_ents_push(out, all->v[i].key, all->v[i].dir))
			return ENOMEM;
	}
	return 0;
}

static int fs_dircache_match(const struct fs_dircache *c, const struct fs_walk *w,
			     const char *rel, const struct stat *st)
{
	return c && c->want == w->want && !strcmp(c->rel, rel) && !strcmp(c->prefix, w->prefix) &&
	       c->st.st_dev == st->st_dev && c->st.st_ino == st->st_ino &&
	       c->st.st_mtim.tv_sec == st->st_mtim.tv_sec &&
	       c->st.st_mtim.tv_nsec == st->st_mtim.tv_nsec;
}

/* The entries of directory `rel` ("" or ending in '/') this page of the
 * walk may reach, sorted; *rest as for fs_slice. */
static int fs_scan(struct fs_walk *w, const char *rel, struct fs_ents *out, int *rest,
		   int *dfd, mt_error *err)
{
	fs_store *s = w->s;
	*out = (struct fs_ents){0};
	*rest = 0;
	int fd = fs_open_beneath(s, rel, O_RDONLY | O_DIRECTORY);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	int e = fd < 0 ? -fd : d ? 0 : errno;
	if (fd >= 0 && !d)
		close(fd);
	/* A prefix nothing was stored under yet is an empty listing. */
	if (!d)
		return e == ENOENT || e == ENOTDIR ? 0 : fs_fail(s, rel, "list", e, 1, err);
	struct stat st;
	if (fstat(dirfd(d), &st) != 0) {
		e = errno;
		closedir(d);
		return fs_fail(s, rel, "list", e, 1, err);
	}
	int rc = 0, hit = 0;
	pthread_mutex_lock(&s->lock);
	if (fs_dircache_match(s->cache, w, rel, &st)) {
		hit = 1;
		rc = fs_slice(w, &s->cache->all, out, rest);
		/* The last page of it: nobody will ask again. */
		if (!rc && !*rest) {
			fs_dircache_free(s->cache);
			s->cache = NULL;
		}
	}
	pthread_mutex_unlock(&s->lock);
	struct fs_dircache *c = NULL;
	if (!hit) {
		c = calloc(1, sizeof *c);
		rc = c ? fs_read_dir(w, d, rel, &c->all) : ENOMEM;
		if (!rc)
			rc = fs_slice(w, &c->all, out, rest);
	}
	/* The walk goes on in this very directory, not in whatever its path
	 * names by then. */
	if (!rc && (*dfd = fcntl(dirfd(d), F_DUPFD_CLOEXEC, 0)) < 0)
		rc = errno;
	closedir(d);
	if (c && !rc && *rest && (c->rel = mti_strdup(rel)) && (c->prefix = mti_strdup(w->prefix))) {
		c->want = w->want;
		c->st = st;
		pthread_mutex_lock(&s->lock);
		fs_dircache_free(s->cache);
		s->cache = c;
		pthread_mutex_unlock(&s->lock);
		c = NULL;
	}
	fs_dircache_free(c);
	if (rc) {
		fs_ents_free(out);
		if (*dfd >= 0)
			close(*dfd);
		*dfd = -1;
		return rc == ENOMEM ? fs_nomem(s, *rel ? rel : w->prefix, err)
				    : fs_fail(s, rel, "list", rc, 1, err);
	}
	return 0;
}

/* Append to the page, or note that a full page has a successor. */
static int fs_walk_add(struct fs_walk *w, const char *key, uint64_t size, int64_t mtime,
		       mt_error *err)
{
	mt_list_page *p = w->page;
	if (p->n == w->max) {
		w->more = 1;
		return 0;
	}
	mt_obj *o = mti_grow(p->objs, p->n, &w->cap, sizeof *o, 64);
	if (!o)
		return fs_nomem(w->s, key, err);
	p->objs = o;
	if (!(p->objs[p->n].key = mti_strdup(key)))
		return fs_nomem(w->s, key, err);
	p->objs[p->n].size = size;
	p->objs[p->n].mtime = mtime;
	p->objs[p->n].etag = NULL;
	p->n++;
	return 0;
}

/* A file the walk reached in the directory open as dfd: list it, or sweep
 * it.  Never through a link: a link is not an object, and the directory
 * was reached beneath the root. */
static int fs_walk_file(struct fs_walk *w, int dfd, const char *key, mt_error *err)
{
	const char *name = strrchr(key, '/');
	name = name ? name + 1 : key;
	struct stat sb;
	int rc = 0;
	/* A file deleted since the scan is simply not there. */
	if (fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(sb.st_mode)) {
		if (w->want == FS_OBJECTS) {
			rc = fs_walk_add(w, key, (uint64_t)sb.st_size, (int64_t)sb.st_mtime, err);
		} else if ((int64_t)sb.st_mtime < w->before) {
			w->n++;
			w->bytes += (uint64_t)sb.st_size;
			if (!w->dry_run && unlinkat(dfd, name, 0) != 0 && errno != ENOENT)
				rc = fs_fail(w->s, key, "delete", errno, 0, err);
		}
	}
	return rc;
}

static int fs_walk_dir(struct fs_walk *w, const char *rel, mt_error *err)
{
	struct fs_ents a;
	int rest, dfd = -1;
	int rc = fs_scan(w, rel, &a, &rest, &dfd, err);
	for (size_t i = 0; !rc && !w->more && i < a.n; i++) {
		if (w->want == FS_PREFIXES)
			rc = fs_walk_add(w, a.v[i].key, 0, 0, err);
		else if (a.v[i].dir)
			rc = fs_walk_dir(w, a.v[i].key, err);
		else
			rc = fs_walk_file(w, dfd, a.v[i].key, err);
	}
	if (dfd >= 0)
		close(dfd);
	/* Files deleted since the scan left the page short of the entries
	 * it could reach: end the page here, the next one goes on. */
	if (!rc && rest)
		w->more = 1;
	fs_ents_free(&a);
	return rc;
}

/* Walk from the deepest directory the prefix names. */
static int fs_walk(struct fs_walk *w, mt_error *err)
{
	const char *slash = strrchr(w->prefix, '/');
	char *dir = strndup(w->prefix, slash ? (size_t)(slash - w->prefix + 1) : 0);
	if (!dir)
		return fs_nomem(w->s, w->prefix, err);
	int rc = fs_walk_dir(w, dir, err);
	free(dir);
	return rc;
}

static int fs_list_any(mt_store *st, enum fs_want want, const char *prefix, const char *token,
		       size_t max, mt_list_page *page, mt_error *err)
{
	*page = (mt_list_page){0};
	prefix = prefix ? prefix : "";
	struct fs_walk w = {.s = (fs_store *)st, .want = want, .prefix = prefix,
			    .plen = strlen(prefix), .after = token,
			    .max = max ? max : PAGE_DEFAULT, .page = page};
	int rc = fs_walk(&w, err);
	/* An empty page that is not the last (see fs_walk_dir) repeats the
	 * request. */
	const char *next = page->n ? page->objs[page->n - 1].key : token ? token : "";
	if (!rc && w.more && !(page->next = mti_strdup(next)))
		rc = fs_nomem(w.s, prefix, err);
	if (rc)
		mti_list_page_free(page);
	return rc;
}

static int fs_list(mt_store *st, const char *prefix, const char *token, size_t max,
		   mt_list_page *page, mt_error *err)
{
	return fs_list_any(st, FS_OBJECTS, prefix, token, max, page, err);
}

static int fs_list_prefixes(mt_store *st, const char *prefix, const char *token, size_t max,
			    mt_list_page *page, mt_error *err)
{
	return fs_list_any(st, FS_PREFIXES, prefix, token, max, page, err);
}

static int fs_sweep(mt_store *st, const char *prefix, int64_t before, int dry_run, uint64_t *n,
		    uint64_t *bytes, mt_error *err)
{
	prefix = prefix ? prefix : "";
	struct fs_walk w = {.s = (fs_store *)st, .want = FS_TEMPS, .prefix = prefix,
			    .plen = strlen(prefix), .before = before, .dry_run = dry_run};
	int rc = fs_walk(&w, err);
	*n = w.n;
	*bytes = w.bytes;
	return rc;
}

static int fs_same_dir(const char *a, const char *b)
{
	const char *sa = strrchr(a, '/'), *sb = strrchr(b, '/');
	return sa && sb && sa - a == sb - b && strncmp(a, b, (size_t)(sa - a)) == 0;
}

/* Remove the directories holding key that are left empty, deepest first,
 * up to (not including) its top-level one ("datasets", "models"): a
 * dataset whose writer gave up (its lock, its shards deleted) leaves no
 * directory that a listing would take for a dataset.  rmdir(2) removes only
 * an empty directory; an upload into one removed meanwhile makes it again
 * (fs_upload_open).  Each directory is reached beneath the root. */
static void fs_prune(fs_store *s, const char *key)
{
	char *dir = mti_strdup(key);
	for (char *slash = dir ? strrchr(dir, '/') : NULL; slash; slash = strrchr(dir, '/')) {
		*slash = '\0';
		if (!strchr(dir, '/'))
			break;
		const char *base;
		int pfd = fs_open_parent(s, dir, 0, &base);
		int gone = pfd >= 0 && unlinkat(pfd, base, AT_REMOVEDIR) == 0;
		if (pfd >= 0)
			close(pfd);
		if (!gone)
			break;
	}
	free(dir);
}

/* Delete each key's file from its directory, reached beneath the root: a
 * key whose directory is (or passes) a link deletes nothing and fails.
 * unlinkat(2) removes a link itself, never its target.  Keys of one
 * directory (gc's, sorted) share one open of it. */
static int fs_del(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	fs_store *s = (fs_store *)st;
	int dfd = -1, rc = 0;
	for (size_t i = 0; !rc && i < n; i++) {
		const char *base;
		if ((rc = fs_key_check(s, keys[i], err)))
			break;
		if (dfd < 0 || !fs_same_dir(keys[i - 1], keys[i])) {
			if (dfd >= 0) {
				close(dfd);
				fs_prune(s, keys[i - 1]);
			}
			dfd = fs_open_parent(s, keys[i], 0, &base);
		} else {
			base = strrchr(keys[i], '/') + 1;
		}
		/* No directory: no such key. */
		int e = dfd == -ENOENT || dfd == -ENOTDIR ? 0 : dfd < 0 ? -dfd
			: unlinkat(dfd, base, 0) != 0 && errno != ENOENT ? errno : 0;
		if (e)
			rc = fs_fail(s, keys[i], "delete", e, 0, err);
	}
	if (dfd >= 0)
		close(dfd);
	if (!rc && n)
		fs_prune(s, keys[n - 1]);
	return rc;
}

static int fs_sync_one(fs_store *s, const char *const *keys, size_t i, mt_error *err)
{
	int rc = fs_key_check(s, keys[i], err);
	if (rc)
		return rc;
	int fd = fs_open_beneath(s, keys[i], O_RDONLY);
	if (fd < 0)
		rc = fs_fail(s, keys[i], "fsync", -fd, 1, err);
	else if (fsync(fd) != 0)
		rc = fs_fail(s, keys[i], "fsync", errno, 1, err);
	if (fd >= 0)
		close(fd);
	/* Objects of one writer share a directory: flush it once. */
	if (!rc && (i == 0 || !fs_same_dir(keys[i - 1], keys[i])))
		fs_sync_parent(s, keys[i]);
	return rc;
}

static int fs_sync(mt_store *st, const char *const *keys, size_t n, mt_error *err)
{
	for (size_t i = 0; i < n; i++) {
		int rc = fs_sync_one((fs_store *)st, keys, i, err);
		if (rc)
			return rc;
	}
	return 0;
}

static void fs_close(mt_store *st)
{
	fs_store *s = (fs_store *)st;
	fs_dircache_free(s->cache);
	pthread_mutex_destroy(&s->lock);
	if (s->rootfd >= 0)
		close(s->rootfd);
	free(s->root);
	free(s->base.url);
	free(s);
}

static const mt_store_ops fs_ops = {
	.scheme = "file",
	.get = fs_get,
	.read = fs_read,
	.put = fs_put,
	.readv = fs_readv,
	.putv = fs_putv,
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

/* `root` is absolute and clean (store.c); it is created when missing only
 * for a writer (create 1), so a reader's mistyped path leaves nothing behind. */
int mti_store_fs_open(const char *root, int create, mt_store **out, mt_error *err)
{
	int e = root[0] != '/' ? EINVAL : create > 0 ? fs_mkdirs(root, 1, 1) : 0;
	struct stat sb;
	if (!e && stat(root, &sb) != 0)
		e = errno;
	if (e == ENOENT && create == 0)
		return mti_err(err, MT_ENOTFOUND, "no store at %s: no such directory", root);
	if (e && !(e == ENOENT && create < 0))
		return mti_err(err, fs_errno_code(e, 0), "store file://%s: %s", root, strerror(e));
	if (!e && !S_ISDIR(sb.st_mode))
		return mti_err(err, MT_EINVAL, "store file://%s: not a directory", root);
	fs_store *s = calloc(1, sizeof *s);
	if (!s)
		return mti_err(err, MT_ENOMEM, "store file://%s: out of memory", root);
	s->base.ops = &fs_ops;
	s->rootfd = -1;
	pthread_mutex_init(&s->lock, NULL);
	/* The root directory "/" must not become "//key". */
	s->root = mti_strdup(strcmp(root, "/") ? root : "");
	s->base.url = mti_asprintf("file://%s", root);
	if (!s->root || !s->base.url) {
		fs_close(&s->base);
		return mti_err(err, MT_ENOMEM, "store file://%s: out of memory", root);
	}
	*out = &s->base;
	return 0;
}
