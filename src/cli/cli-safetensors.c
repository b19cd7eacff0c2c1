/* cli-safetensors.c — `model export` and `model import`: checkpoints to and from .safetensors files. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* A safetensors header larger than this is refused (the reference reader's
 * limit is 100 MB as well): a damaged length must not make us allocate it. */
#define HEADER_MAX (100u << 20)

static const struct {
	const char *st;
	mt_dtype dt;
} dtypes[] = {
	{ "BOOL", MT_BOOL },	{ "I8", MT_INT8 },     { "I16", MT_INT16 },   { "I32", MT_INT32 },
	{ "I64", MT_INT64 },	{ "U8", MT_UINT8 },    { "U16", MT_UINT16 },  { "U32", MT_UINT32 },
	{ "U64", MT_UINT64 },	{ "F16", MT_FLOAT16 }, { "F32", MT_FLOAT32 }, { "F64", MT_FLOAT64 },
	{ "BF16", MT_BFLOAT16 },
};

static const char *st_name(mt_dtype t)
{
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (dtypes[i].dt == t)
			return dtypes[i].st;
	return NULL;
}

static mt_dtype st_dtype(const char *name)
{
	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
		if (!strcmp(dtypes[i].st, name))
			return dtypes[i].dt;
	return MT_DTYPE_INVALID;
}

/* ---- export ---- */

/* The header: every tensor in the checkpoint's order, its data right after
 * the previous one's; __metadata__ carries what a checkpoint holds beside
 * tensors (strings only, as the format requires), so an import gets it back. */
static char *export_header(const mt_ckpt *c, size_t *len)
{
	json_t *h = json_object();
	json_t *md = json_pack("{s:s,s:s,s:s,s:s}", "format", "pt", "matorage.model",
			       mt_ckpt_model(c), "matorage.version", mt_ckpt_version(c),
			       "matorage.meta", mt_ckpt_meta(c));
	json_object_set_new(md, "matorage.state", json_string(mt_ckpt_state(c)));
	/* The metadata's string members also stand on their own, for other readers. */
	json_t *meta = json_loads(mt_ckpt_meta(c), 0, NULL);
	const char *mk;
	json_t *mv;
	json_object_foreach(meta, mk, mv) if (json_is_string(mv) && !json_object_get(md, mk))
		json_object_set(md, mk, mv);
	json_decref(meta);
	json_object_set_new(h, "__metadata__", md);
	uint64_t off = 0;
	for (size_t i = 0; i < mt_ckpt_ntensors(c); i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, i, &t, NULL);
		json_t *shape = json_array();
		for (int d = 0; d < t.ndim; d++)
			json_array_append_new(shape, json_integer((json_int_t)t.shape[d]));
		json_object_set_new(h, t.key,
				    json_pack("{s:s,s:o,s:[I,I]}", "dtype", st_name(t.dtype), "shape",
					      shape, "data_offsets", (json_int_t)off,
					      (json_int_t)(off + t.bytes)));
		off += t.bytes;
	}
	char *text = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(h);
	if (!text)
		return NULL;
	/* Padded with spaces to a multiple of 8, so the data is aligned. */
	size_t n = strlen(text), padded = (n + 7) / 8 * 8;
	char *out = app_xmalloc(padded + 1);
	memcpy(out, text, n);
	memset(out + n, ' ', padded - n);
	out[padded] = 0;
	free(text);
	*len = padded;
	return out;
}

static int export_tensors(mt_ckpt *c, FILE *f, const char *path)
{
	void *buf = NULL;
	size_t cap = 0;
	mt_error err = { 0 };
	int rc = CLI_OK;
	for (size_t i = 0; i < mt_ckpt_ntensors(c) && rc == CLI_OK; i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, i, &t, NULL);
		if (t.bytes > cap) {
			free(buf);
			cap = (size_t)t.bytes;
			buf = app_xmalloc(cap);
		}
		if (mt_ckpt_read(c, t.key, buf, cap, &err))
			rc = cli_fail(&err);
		else if (t.bytes && fwrite(buf, 1, (size_t)t.bytes, f) != t.bytes)
			rc = cli_error("%s: cannot write: %s", path, strerror(errno));
	}
	free(buf);
	return rc;
}

int cli_safetensors_export(mt_store *s, const char *spec, const char *path)
{
	mt_ckpt *c = NULL;
	mt_error err = { 0 };
	if (mt_ckpt_open(s, spec, &c, &err))
		return cli_fail(&err);
	size_t hlen = 0;
	char *header = export_header(c, &hlen);
	char *tmp = app_xasprintf("%s.tmp.%ld", path, (long)getpid());
	FILE *f = header ? fopen(tmp, "wb") : NULL;
	int rc = !header ? cli_error("%s: cannot build the header", path)
		 : !f	 ? cli_error("%s: cannot create: %s", tmp, strerror(errno))
			 : CLI_OK;
	unsigned char len8[8];
	for (int i = 0; i < 8; i++)
		len8[i] = (unsigned char)((uint64_t)hlen >> (8 * i));
	if (!rc && (fwrite(len8, 1, 8, f) != 8 || fwrite(header, 1, hlen, f) != hlen))
		rc = cli_error("%s: cannot write: %s", path, strerror(errno));
	if (!rc)
		rc = export_tensors(c, f, path);
	if (f && fclose(f) && !rc)
		rc = cli_error("%s: cannot write: %s", path, strerror(errno));
	if (!rc && rename(tmp, path))
		rc = cli_error("%s: cannot rename into place: %s", path, strerror(errno));
	if (rc && f)
		unlink(tmp);
	if (!rc)
		printf("exported %s@%s to %s: %zu tensor(s)\n", mt_ckpt_model(c), mt_ckpt_version(c),
		       path, mt_ckpt_ntensors(c));
	free(tmp);
	free(header);
	mt_ckpt_close(c);
	return rc;
}

/* ---- import ---- */

struct st_file {
	const char *path;
	unsigned char *map;
	size_t size;
	json_t *header;
	const unsigned char *data; /* the byte buffer after the header */
	uint64_t data_len;
};

/* One entry of the header, checked against the file: a known dtype, a
 * shape, and offsets inside the data whose length the shape gives. */
static int st_entry(const struct st_file *f, const char *key, json_t *e, mt_dtype *dt,
		    uint64_t *shape, int *ndim, uint64_t *begin, uint64_t *end)
{
	const char *dtype = NULL;
	json_t *sh = NULL;
	json_int_t b = -1, en = -1;
	if (json_unpack(e, "{s:s,s:o,s:[II]}", "dtype", &dtype, "shape", &sh, "data_offsets", &b,
			&en) ||
	    !json_is_array(sh))
		return cli_error("%s: tensor '%s': not a safetensors entry (dtype, shape, "
				 "data_offsets)", f->path, key);
	if (!(*dt = st_dtype(dtype)))
		return cli_error("%s: tensor '%s': dtype %s is not supported", f->path, key, dtype);
	*ndim = (int)json_array_size(sh);
	if (*ndim > MT_MAX_RANK)
		return cli_error("%s: tensor '%s': %d dimensions (at most %d)", f->path, key, *ndim,
				 MT_MAX_RANK);
	uint64_t n = mt_dtype_size(*dt);
	for (int i = 0; i < *ndim; i++) {
		json_t *d = json_array_get(sh, (size_t)i);
		if (!json_is_integer(d) || json_integer_value(d) < 0)
			return cli_error("%s: tensor '%s': bad shape", f->path, key);
		shape[i] = (uint64_t)json_integer_value(d);
		if (shape[i] && n > UINT64_MAX / shape[i])
			return cli_error("%s: tensor '%s': shape too large", f->path, key);
		n *= shape[i];
	}
	if (b < 0 || en < b || (uint64_t)en > f->data_len || (uint64_t)(en - b) != n)
		return cli_error("%s: tensor '%s': data_offsets [%lld, %lld] do not hold its %" PRIu64
				 " bytes within the file's %" PRIu64 " (truncated or damaged?)",
				 f->path, key, (long long)b, (long long)en, n, f->data_len);
	*begin = (uint64_t)b;
	*end = (uint64_t)en;
	return CLI_OK;
}

static int st_open(struct st_file *f)
{
	int fd = open(f->path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return cli_error("%s: cannot open: %s", f->path, strerror(e));
	}
	f->size = (size_t)st.st_size;
	f->map = f->size ? mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
	close(fd);
	if (f->map == MAP_FAILED) {
		f->map = NULL;
		return cli_error("%s: cannot map: %s", f->path, strerror(errno));
	}
	uint64_t hlen = 0;
	for (int i = 0; f->size >= 8 && i < 8; i++)
		hlen |= (uint64_t)f->map[i] << (8 * i);
	if (f->size < 8 || hlen > HEADER_MAX || hlen > f->size - 8)
		return cli_error("%s: not a safetensors file: %s", f->path,
				 f->size < 8 ? "shorter than its 8-byte header length"
					     : "the header length runs past the end (truncated?)");
	json_error_t je;
	f->header = json_loadb((const char *)f->map + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
	if (!json_is_object(f->header))
		return cli_error("%s: not a safetensors file: its header is not a JSON object%s%s",
				 f->path, f->header ? "" : ": ", f->header ? "" : je.text);
	f->data = f->map + 8 + hlen;
	f->data_len = f->size - 8 - hlen;
	return CLI_OK;
}

static void st_close(struct st_file *f)
{
	json_decref(f->header);
	if (f->map)
		munmap(f->map, f->size);
}

/* Every tensor entry of the header: checked (w NULL), or checked and added
 * to w.  Import checks them all first, so a damaged file commits nothing and
 * leaves no tensor behind; -1 when the library refused one (err says why). */
static int st_tensors(const struct st_file *f, mt_ckpt_writer *w, mt_error *err)
{
	const char *key;
	json_t *e;
	json_object_foreach(f->header, key, e)
	{
		if (!strcmp(key, "__metadata__"))
			continue;
		/* Set by st_entry when it returns 0; zeroed for -O2's
		 * -Wmaybe-uninitialized, which cannot see that. */
		mt_dtype dt = MT_UINT8;
		uint64_t shape[MT_MAX_RANK], b = 0, en = 0;
		int ndim = 0, rc = st_entry(f, key, e, &dt, shape, &ndim, &b, &en);
		if (rc)
			return rc;
		if (w && mt_ckpt_add(w, key, dt, ndim, shape, f->data + b, (size_t)(en - b), err))
			return -1;
	}
	return CLI_OK;
}

/* A refused matorage.state or matorage.meta, named where it was found. */
static int st_extra_fail(const struct st_file *f, const char *field, const mt_error *err)
{
	return cli_error("%s: __metadata__ \"%s\": %s; nothing committed", f->path, field,
			 err->message[0] ? err->message : mt_strerror(err->code));
}

/* state and meta saved by an export come back; anything else in __metadata__
 * goes to meta as it is (strings). */
static int st_extras(const struct st_file *f, mt_ckpt_writer *w, mt_error *err)
{
	json_t *md = json_object_get(f->header, "__metadata__");
	json_t *js = json_object_get(md, "matorage.state"), *jm = json_object_get(md, "matorage.meta");
	if (md && !json_is_object(md))
		return cli_error("%s: __metadata__ is not an object of strings", f->path);
	if ((js && !json_is_string(js)) || (jm && !json_is_string(jm)))
		return cli_error("%s: __metadata__ \"%s\" is not a string (safetensors metadata "
				 "holds strings only)", f->path,
				 js && !json_is_string(js) ? "matorage.state" : "matorage.meta");
	const char *state = json_string_value(js), *meta = json_string_value(jm);
	if (state && mt_ckpt_set_state(w, state, err))
		return st_extra_fail(f, "matorage.state", err);
	if (meta)
		return mt_ckpt_set_meta(w, meta, err) ? st_extra_fail(f, "matorage.meta", err) : 0;
	json_t *m = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(md, k, v) if (json_is_string(v) && strncmp(k, "matorage.", 9))
		json_object_set(m, k, v);
	char *text = json_dumps(m, JSON_COMPACT);
	int rc = text && mt_ckpt_set_meta(w, text, err) ? st_extra_fail(f, "(the rest)", err) : 0;
	free(text);
	json_decref(m);
	return rc;
}

int cli_safetensors_import(mt_store *s, const char *name, const char *path, int keep)
{
	struct st_file f = { .path = path };
	int rc = st_open(&f);
	if (!rc)
		rc = st_tensors(&f, NULL, NULL);
	mt_ckpt_opts o;
	mt_ckpt_opts_init(&o);
	o.keep = keep;
	mt_ckpt_writer *w = NULL;
	mt_error err = { 0 };
	char *version = NULL;
	int extras = 0;
	if (!rc && (mt_ckpt_writer_open(s, name, &o, &w, &err) || st_tensors(&f, w, &err) ||
		    (extras = st_extras(&f, w, &err)) || mt_ckpt_commit(w, &version, &err))) {
		const char *why = err.message[0] ? err.message : mt_strerror(err.code);
		/* A commit that landed hands out its name even when --keep then fails. */
		if (extras)
			rc = CLI_FAIL; /* st_extras said what and where */
		else if (version)
			rc = cli_error("%s: committed as %s@%s, but removing older checkpoints "
				       "failed: %s", path, name, version, why);
		else
			rc = cli_error("%s: nothing committed: %s", path, why);
	}
	if (!rc)
		printf("imported %s as %s@%s: %zu tensor(s)\n", path, name, version,
		       json_object_size(f.header) - (json_object_get(f.header, "__metadata__") ? 1 : 0));
	mt_ckpt_writer_close(w);
	free(version);
	st_close(&f);
	return rc;
}
