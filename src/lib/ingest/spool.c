/* spool.c — a stream's local write-ahead spool: rows made durable on disk before they count as received, replayed until committed. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "spool.h"
#include "util.h"

/* Each batch in the log: this header, then the batch's rows attribute after
 * attribute.  seq is the spool's number of the batch's first row.  A spool
 * with a ragged attribute writes its batches as MTSPOOL2, where a ragged
 * attribute's part is its rows' lengths (uint64, little-endian) and then their
 * items; a spool of fixed attributes keeps MTSPOOL1, so spools written before
 * ragged attributes existed are read as they were. */
#define SPOOL_MAGIC "MTSPOOL1"
#define SPOOL_MAGIC_RAGGED "MTSPOOL2"
struct spool_head {
	char magic[8];
	uint64_t seq, rows, bytes, hash; /* hash: FNV-1a 64 of the rows' bytes */
};

struct mti_spool {
	char *dir, *log_path, *state_path;
	int log_fd, lock_fd;
	char id[33];
	char *dataset, *layout, *version;
	uint64_t committed; /* rows of the spool that a version holds */
	uint64_t end;       /* the number of the next row to spool */
	size_t nattrs;
	size_t *row_bytes;  /* per row, or per item when ragged */
	int *ragged;
	int any_ragged;
	uint8_t *loaded;    /* the log as read at open, until replayed */
	size_t loaded_len;
};

static uint64_t spool_hash(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int spool_sys(const struct mti_spool *sp, const char *what, const char *path,
		     mt_error *err)
{
	return mti_err(err, MT_EIO, "spool %s: %s %s: %s", sp->dir, what, path, strerror(errno));
}

static int spool_nomem(mt_error *err)
{
	return mti_err(err, MT_ENOMEM, "out of memory");
}

/* Write all of buf, or fail. */
static int spool_write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The state file, replaced whole (temporary file, fsync, rename, fsync of the
 * directory), so a crash leaves the old state or the new one. */
static int spool_save_state(struct mti_spool *sp, mt_error *err)
{
	char *tmp = mti_asprintf("%s.tmp", sp->state_path);
	char *text = mti_asprintf("id %s\ndataset %s\nlayout %s\ncommitted %" PRIu64 "\n"
				   "version %s\n", sp->id, sp->dataset, sp->layout, sp->committed,
				   sp->version ? sp->version : "-");
	if (!tmp || !text) {
		free(tmp);
		free(text);
		return spool_nomem(err);
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int rc = fd < 0 || spool_write_all(fd, text, strlen(text)) || fsync(fd);
	if (fd >= 0 && close(fd))
		rc = 1;
	if (!rc && rename(tmp, sp->state_path))
		rc = 1;
	int dfd = rc ? -1 : open(sp->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	if (rc)
		rc = spool_sys(sp, "writing", tmp, err);
	free(tmp);
	free(text);
	return rc;
}

/* A field "KEY VALUE" of the state file's text. */
static char *spool_field(const char *text, const char *key)
{
	size_t kl = strlen(key);
	for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			const char *e = strchr(p + kl + 1, '\n');
			return mti_asprintf("%.*s", (int)(e ? e - (p + kl + 1) : (long)strlen(p + kl + 1)),
					     p + kl + 1);
		}
	}
	return NULL;
}

static void spool_new_id(char *id)
{
	uint8_t b[16] = { 0 };
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, sizeof b) != (ssize_t)sizeof b) {
		/* No urandom: time and pid still tell spools apart on one machine. */
		uint64_t t = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
		memcpy(b, &t, sizeof t);
	}
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 16; i++)
		snprintf(id + 2 * i, 3, "%02x", b[i]);
}

/* The whole small file at path, NUL-terminated; NULL with errno. */
static char *spool_read_text(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return NULL;
	char *text = NULL;
	if (!fstat(fd, &st) && st.st_size < (1 << 20) && (text = malloc((size_t)st.st_size + 1))) {
		ssize_t n = pread(fd, text, (size_t)st.st_size, 0);
		if (n < 0) {
			free(text);
			text = NULL;
		} else {
			text[n] = 0;
		}
	} else if (!text) {
		errno = errno ? errno : EFBIG;
	}
	int e = errno;
	close(fd);
	errno = e;
	return text;
}

/* Read the state, or start one; it must be this dataset's, with these attributes. */
static int spool_load_state(struct mti_spool *sp, mt_error *err)
{
	errno = 0;
	char *text = spool_read_text(sp->state_path);
	if (!text && errno != ENOENT)
		return spool_sys(sp, "reading", sp->state_path, err);
	if (!text) {
		spool_new_id(sp->id);
		return spool_save_state(sp, err);
	}
	char *id = spool_field(text, "id"), *ds = spool_field(text, "dataset"),
	     *layout = spool_field(text, "layout"), *committed = spool_field(text, "committed"),
	     *version = spool_field(text, "version");
	int rc = 0;
	if (!id || strlen(id) != 32 || !ds || !layout || !committed || !version)
		rc = mti_err(err, MT_EFORMAT, "spool %s: %s is not a spool's state", sp->dir,
			     sp->state_path);
	else if (strcmp(ds, sp->dataset))
		rc = mti_err(err, MT_EINVAL, "spool %s belongs to dataset %s, not %s", sp->dir, ds,
			     sp->dataset);
	else if (strcmp(layout, sp->layout))
		rc = mti_err(err, MT_EINVAL, "spool %s holds rows of other attributes (%s), not %s",
			     sp->dir, layout, sp->layout);
	if (!rc) {
		memcpy(sp->id, id, 33);
		sp->committed = strtoull(committed, NULL, 10);
		if (strcmp(version, "-") && !(sp->version = mti_strdup(version)))
			rc = spool_nomem(err);
	}
	free(id), free(ds), free(layout), free(committed), free(version), free(text);
	return rc;
}

/* The ragged attribute's items in a batch's part: the sum of its n lengths
 * at p (maybe unaligned); UINT64_MAX when they overflow. */
static uint64_t spool_items(const uint8_t *p, uint64_t n)
{
	uint64_t items = 0, l;
	for (uint64_t r = 0; r < n; r++) {
		memcpy(&l, p + r * sizeof l, sizeof l);
		if (__builtin_add_overflow(items, l, &items))
			return UINT64_MAX;
	}
	return items;
}

/* The bytes a batch of h->rows rows takes (p: its rows, h->bytes of them,
 * already checksummed); UINT64_MAX when its lengths do not add up. */
static uint64_t spool_batch_bytes(const struct mti_spool *sp, const struct spool_head *h,
				  const uint8_t *p)
{
	uint64_t bytes = 0, part;
	for (size_t i = 0; i < sp->nattrs; i++) {
		uint64_t units = h->rows;
		if (sp->ragged[i]) {
			if (__builtin_mul_overflow(h->rows, 8, &part) || part > h->bytes - bytes)
				return UINT64_MAX;
			units = spool_items(p + bytes, h->rows);
			bytes += part;
		}
		if (units == UINT64_MAX || __builtin_mul_overflow(units, sp->row_bytes[i], &part) ||
		    __builtin_add_overflow(bytes, part, &bytes) || bytes > h->bytes)
			return UINT64_MAX;
	}
	return bytes;
}

/* Read the log; a batch cut short or damaged by a crash while it was written was
 * never received, so it is cut off. */
static int spool_load_log(struct mti_spool *sp, mt_error *err)
{
	struct stat st;
	if (fstat(sp->log_fd, &st))
		return spool_sys(sp, "reading", sp->log_path, err);
	size_t len = (size_t)st.st_size, off = 0;
	if (!(sp->loaded = malloc(len ? len : 1)))
		return spool_nomem(err);
	if (len && pread(sp->log_fd, sp->loaded, len, 0) != (ssize_t)len)
		return spool_sys(sp, "reading", sp->log_path, err);
	sp->end = sp->committed;
	while (off + sizeof(struct spool_head) <= len) {
		struct spool_head h;
		memcpy(&h, sp->loaded + off, sizeof h);
		if (memcmp(h.magic, sp->any_ragged ? SPOOL_MAGIC_RAGGED : SPOOL_MAGIC, 8) ||
		    h.bytes > len - off - sizeof h ||
		    spool_hash(0xcbf29ce484222325ull, sp->loaded + off + sizeof h, h.bytes) != h.hash ||
		    spool_batch_bytes(sp, &h, sp->loaded + off + sizeof h) != h.bytes)
			break;
		if (h.seq + h.rows > sp->end)
			sp->end = h.seq + h.rows;
		off += sizeof h + (size_t)h.bytes;
	}
	sp->loaded_len = off;
	if (off < len && (ftruncate(sp->log_fd, (off_t)off) || fsync(sp->log_fd)))
		return spool_sys(sp, "cutting a torn batch off", sp->log_path, err);
	if (lseek(sp->log_fd, (off_t)off, SEEK_SET) < 0)
		return spool_sys(sp, "seeking in", sp->log_path, err);
	return 0;
}

int mti_spool_open(const char *dir, const char *dataset, const char *layout, size_t nattrs,
		   const size_t *row_bytes, const int *ragged, struct mti_spool **out,
		   mt_error *err)
{
	*out = NULL;
	struct mti_spool *sp = calloc(1, sizeof *sp);
	if (!sp)
		return spool_nomem(err);
	sp->log_fd = sp->lock_fd = -1;
	sp->nattrs = nattrs;
	char *lock = mti_asprintf("%s/lock", dir);
	if (!lock || !(sp->dir = mti_strdup(dir)) || !(sp->dataset = mti_strdup(dataset)) ||
	    !(sp->layout = mti_strdup(layout)) ||
	    !(sp->row_bytes = calloc(nattrs ? nattrs : 1, sizeof *sp->row_bytes)) ||
	    !(sp->ragged = calloc(nattrs ? nattrs : 1, sizeof *sp->ragged)) ||
	    !(sp->log_path = mti_asprintf("%s/log", dir)) ||
	    !(sp->state_path = mti_asprintf("%s/state", dir))) {
		free(lock);
		mti_spool_close(sp);
		return spool_nomem(err);
	}
	memcpy(sp->row_bytes, row_bytes, nattrs * sizeof *row_bytes);
	for (size_t i = 0; ragged && i < nattrs; i++)
		sp->any_ragged |= sp->ragged[i] = ragged[i] != 0;
	int rc = 0;
	if (mkdir(dir, 0700) && errno != EEXIST)
		rc = spool_sys(sp, "creating", dir, err);
	if (!rc && (sp->lock_fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		rc = spool_sys(sp, "opening", lock, err);
	/* One stream per spool: two would number their rows over each other. */
	if (!rc && flock(sp->lock_fd, LOCK_EX | LOCK_NB))
		rc = mti_err(err, MT_ESTATE, "spool %s is in use by another ingest", dir);
	if (!rc)
		rc = spool_load_state(sp, err);
	if (!rc && (sp->log_fd = open(sp->log_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0)
		rc = spool_sys(sp, "opening", sp->log_path, err);
	if (!rc)
		rc = spool_load_log(sp, err);
	free(lock);
	if (rc)
		mti_spool_close(sp);
	else
		*out = sp;
	return rc;
}

void mti_spool_close(struct mti_spool *sp)
{
	if (!sp)
		return;
	if (sp->log_fd >= 0)
		close(sp->log_fd);
	if (sp->lock_fd >= 0)
		close(sp->lock_fd);
	free(sp->dir), free(sp->log_path), free(sp->state_path), free(sp->dataset);
	free(sp->layout), free(sp->version), free(sp->row_bytes), free(sp->loaded);
	free(sp->ragged);
	free(sp);
}

const char *mti_spool_id(const struct mti_spool *sp)
{
	return sp->id;
}
const char *mti_spool_version(const struct mti_spool *sp)
{
	return sp->version;
}
uint64_t mti_spool_committed(const struct mti_spool *sp)
{
	return sp->committed;
}
uint64_t mti_spool_end(const struct mti_spool *sp)
{
	return sp->end;
}

/* Attribute i's part of a batch at *p: its rows from `skip` on (lengths into
 * lens, room for h->rows, when ragged; NULL otherwise); *p moves past the part. */
static const uint8_t *spool_part(const struct mti_spool *sp, size_t i, const struct spool_head *h,
				 uint64_t skip, const uint8_t **p, uint64_t *lens)
{
	uint64_t before = skip, total = h->rows;
	if (sp->ragged[i]) {
		memcpy(lens, *p, (size_t)h->rows * sizeof *lens);
		*p += h->rows * sizeof *lens;
		before = total = 0;
		for (uint64_t r = 0; r < h->rows; r++) {
			before += r < skip ? lens[r] : 0;
			total += lens[r];
		}
		memmove(lens, lens + skip, (size_t)(h->rows - skip) * sizeof *lens);
	}
	const uint8_t *rows = *p + before * sp->row_bytes[i];
	*p += total * sp->row_bytes[i];
	return rows;
}

/* Batch by batch: its rows from `committed` on to fn. */
static int spool_replay_batches(struct mti_spool *sp, uint64_t committed, mti_spool_fn fn,
				void *ud, const uint8_t **cols, uint64_t **lens, mt_error *err)
{
	int rc = 0;
	for (size_t off = 0; !rc && off < sp->loaded_len;) {
		struct spool_head h;
		memcpy(&h, sp->loaded + off, sizeof h);
		const uint8_t *p = sp->loaded + off + sizeof h;
		off += sizeof h + (size_t)h.bytes;
		if (h.seq + h.rows <= committed)
			continue;
		uint64_t skip = committed > h.seq ? committed - h.seq : 0;
		for (size_t i = 0; !rc && i < sp->nattrs; i++) {
			lens[i] = NULL;
			if (sp->ragged[i] && !(lens[i] = calloc((size_t)h.rows + 1, sizeof **lens)))
				rc = spool_nomem(err);
			if (!rc)
				cols[i] = spool_part(sp, i, &h, skip, &p, lens[i]);
		}
		if (!rc)
			rc = fn(ud, h.rows - skip, cols, (const uint64_t *const *)lens, err);
		for (size_t i = 0; i < sp->nattrs; i++) {
			free(lens[i]);
			lens[i] = NULL;
		}
	}
	return rc;
}

int mti_spool_replay(struct mti_spool *sp, uint64_t committed, mti_spool_fn fn, void *ud,
		     mt_error *err)
{
	const uint8_t **cols = calloc(sp->nattrs ? sp->nattrs : 1, sizeof *cols);
	uint64_t **lens = calloc(sp->nattrs ? sp->nattrs : 1, sizeof *lens);
	int rc = cols && lens ? spool_replay_batches(sp, committed, fn, ud, cols, lens, err)
			      : spool_nomem(err);
	free(cols);
	free(lens);
	free(sp->loaded);
	sp->loaded = NULL;
	sp->loaded_len = 0;
	return rc;
}

/* The bytes of attribute i's part of a batch of `rows` rows. */
static size_t spool_part_bytes(const struct mti_spool *sp, size_t i, uint64_t rows,
			       const uint64_t *const *lens)
{
	if (!sp->ragged[i])
		return (size_t)rows * sp->row_bytes[i];
	uint64_t items = 0;
	for (uint64_t r = 0; r < rows; r++)
		items += lens[i][r];
	return (size_t)items * sp->row_bytes[i];
}

int mti_spool_append(struct mti_spool *sp, uint64_t rows, const uint8_t *const *cols,
		     const uint64_t *const *lens, mt_error *err)
{
	struct spool_head h = { .seq = sp->end, .rows = rows, .hash = 0xcbf29ce484222325ull };
	memcpy(h.magic, sp->any_ragged ? SPOOL_MAGIC_RAGGED : SPOOL_MAGIC, 8);
	size_t *part = calloc(sp->nattrs ? sp->nattrs : 1, sizeof *part);
	if (!part)
		return spool_nomem(err);
	for (size_t i = 0; i < sp->nattrs; i++) {
		part[i] = spool_part_bytes(sp, i, rows, lens);
		if (sp->ragged[i]) {
			h.bytes += rows * sizeof **lens;
			h.hash = spool_hash(h.hash, lens[i], (size_t)rows * sizeof **lens);
		}
		h.bytes += part[i];
		h.hash = spool_hash(h.hash, cols[i], part[i]);
	}
	int rc = spool_write_all(sp->log_fd, &h, sizeof h);
	for (size_t i = 0; !rc && i < sp->nattrs; i++)
		rc = (sp->ragged[i] &&
		      spool_write_all(sp->log_fd, lens[i], (size_t)rows * sizeof **lens)) ||
		     spool_write_all(sp->log_fd, cols[i], part[i]);
	free(part);
	if (rc)
		return spool_sys(sp, "writing", sp->log_path, err);
	if (fdatasync(sp->log_fd))
		return spool_sys(sp, "syncing", sp->log_path, err);
	sp->end += rows;
	return 0;
}

int mti_spool_commit(struct mti_spool *sp, uint64_t committed, const char *version, mt_error *err)
{
	char *v = version ? mti_strdup(version) : NULL;
	if (version && !v)
		return spool_nomem(err);
	sp->committed = committed;
	free(sp->version);
	sp->version = v;
	int rc = spool_save_state(sp, err);
	/* Everything is in the store: the log starts again empty.  A crash before the
	 * cut leaves batches the state already calls committed, which replay skips. */
	if (!rc && committed == sp->end &&
	    (ftruncate(sp->log_fd, 0) || lseek(sp->log_fd, 0, SEEK_SET) < 0 || fsync(sp->log_fd)))
		rc = spool_sys(sp, "emptying", sp->log_path, err);
	return rc;
}
