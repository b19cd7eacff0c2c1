/* format-shard.c — build one shard: compress chunks in parallel, assemble the HDF5 file image in memory, index it. */
#include <hdf5.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "format.h"
#include "pool.h"

#define INDEX_DATASET "_matorage_index"

/* One HDF5 dataset of the shard and the chunks compressed for it. */
struct part {
	char name[300];
	const mt_attr *attr;
	mt_dtype dtype;
	int rank;              /* dims after the first */
	hsize_t shape[MT_MAX_RANK];
	const uint8_t *data;
	mt_index_entry *entry; /* units, chunk_units, unit_bytes, chunks */
	void **zbuf;           /* compressed chunk bytes */
	int borrowed;          /* zbuf points into the caller's bytes */
};

struct compress_job {
	struct part *parts;
	size_t nparts;
	size_t *first_job; /* first job number of each part */
	int level;
	mt_error *errs;    /* one per job, only the failing ones are read */
};

static int compress_one(void *ud, size_t j)
{
	struct compress_job *cj = ud;
	size_t p = 0;
	while (p + 1 < cj->nparts && cj->first_job[p + 1] <= j)
		p++;
	struct part *pt = &cj->parts[p];
	size_t c = j - cj->first_job[p];
	mt_chunk *k = &pt->entry->chunks[c];
	size_t full = (size_t)(pt->entry->chunk_units * pt->entry->unit_bytes);
	size_t have = (size_t)(k->count * pt->entry->unit_bytes);
	const uint8_t *src = pt->data + k->first * pt->entry->unit_bytes;
	uint8_t *padded = NULL;
	/* HDF5 stores edge chunks at full size: pad the last one with zeros. */
	if (have < full) {
		padded = calloc(1, full);
		if (!padded)
			return mti_err(&cj->errs[j], MT_ENOMEM, "%s: out of memory", pt->name);
		memcpy(padded, src, have);
		src = padded;
	}
	size_t zlen = 0;
	int rc = mti_zstd_compress(src, full, cj->level, &pt->zbuf[c], &zlen, &cj->errs[j]);
	free(padded);
	if (rc)
		return rc;
	k->size = zlen;
	k->xxh3 = mti_xxh3(pt->zbuf[c], zlen);
	return 0;
}

static herr_t h5_walk(unsigned n, const H5E_error2_t *e, void *ud)
{
	/* Keep the innermost description: it says what actually went wrong. */
	if (n == 0 && e->desc)
		snprintf(ud, 256, "%s (%s)", e->desc, e->func_name ? e->func_name : "?");
	return 0;
}

static int h5_fail(mt_error *err, const char *dataset, const char *what)
{
	char msg[256] = "unknown HDF5 error";
	H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, h5_walk, msg);
	H5Eclear2(H5E_DEFAULT);
	return mti_err(err, MT_EHDF5, "dataset %s: shard: %s: %s", dataset, what, msg);
}

/* The HDF5 file type for a dtype: little-endian, and the types h5py maps
 * to numpy's bool and float16. */
static hid_t h5_type(mt_dtype t)
{
	hid_t id = H5I_INVALID_HID;
	switch (t) {
	case MT_BOOL: {
		id = H5Tenum_create(H5T_NATIVE_INT8);
		int8_t f = 0, v = 1;
		H5Tenum_insert(id, "FALSE", &f);
		H5Tenum_insert(id, "TRUE", &v);
		return id;
	}
	case MT_FLOAT16:
		id = H5Tcopy(H5T_IEEE_F32LE);
		H5Tset_fields(id, 15, 10, 5, 0, 10);
		H5Tset_size(id, 2);
		H5Tset_ebias(id, 15);
		H5Tset_precision(id, 16);
		return id;
	case MT_INT8: return H5Tcopy(H5T_STD_I8LE);
	case MT_INT16: return H5Tcopy(H5T_STD_I16LE);
	case MT_INT32: return H5Tcopy(H5T_STD_I32LE);
	case MT_INT64: return H5Tcopy(H5T_STD_I64LE);
	case MT_UINT8:
	case MT_STR: /* the text's UTF-8 bytes; matorage_dtype says "str" */
		return H5Tcopy(H5T_STD_U8LE);
	case MT_UINT16: return H5Tcopy(H5T_STD_U16LE);
	case MT_UINT32: return H5Tcopy(H5T_STD_U32LE);
	case MT_UINT64: return H5Tcopy(H5T_STD_U64LE);
	case MT_FLOAT32: return H5Tcopy(H5T_IEEE_F32LE);
	case MT_FLOAT64: return H5Tcopy(H5T_IEEE_F64LE);
	default: return H5I_INVALID_HID;
	}
}

static int h5_attr_string(hid_t obj, const char *name, const char *value)
{
	hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
	H5Tset_size(t, strlen(value) + 1);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hid_t a = H5Acreate2(obj, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
	herr_t rc = a < 0 ? -1 : H5Awrite(a, t, value);
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(sp);
	H5Tclose(t);
	return rc < 0 ? MT_EIO : 0;
}

static int h5_attr_u64(hid_t obj, const char *name, uint64_t value)
{
	hid_t sp = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(obj, name, H5T_STD_U64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
	herr_t rc = a < 0 ? -1 : H5Awrite(a, H5T_NATIVE_UINT64, &value);
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(sp);
	return rc < 0 ? MT_EIO : 0;
}

/* Create one chunked dataset and write its precompressed chunks, freeing
 * each once HDF5 holds its copy (the shard would otherwise sit in memory
 * twice). */
static int write_part(hid_t file, struct part *pt, int level, const char *dataset,
		      mt_error *err)
{
	const mt_index_entry *e = pt->entry;
	hsize_t dims[MT_MAX_RANK + 1], chunk[MT_MAX_RANK + 1], off[MT_MAX_RANK + 1] = {0};
	dims[0] = e->units;
	chunk[0] = e->chunk_units;
	for (int i = 0; i < pt->rank; i++)
		dims[i + 1] = chunk[i + 1] = pt->shape[i];
	hid_t sp = H5Screate_simple(pt->rank + 1, dims, NULL);
	hid_t type = h5_type(pt->dtype);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_obj_track_times(dcpl, 0);
	H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);
	if (e->nchunks) {
		unsigned cd = (unsigned)level;
		H5Pset_chunk(dcpl, pt->rank + 1, chunk);
		H5Pset_filter(dcpl, MT_ZSTD_FILTER_ID, H5Z_FLAG_MANDATORY, 1, &cd);
	}
	hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
	H5Pset_create_intermediate_group(lcpl, 1);
	hid_t ds = H5Dcreate2(file, pt->name, type, sp, lcpl, dcpl, H5P_DEFAULT);
	int rc = 0;
	if (ds < 0 || h5_attr_string(ds, "matorage_dtype", mt_dtype_name(pt->dtype)))
		rc = h5_fail(err, dataset, pt->name);
	for (size_t c = 0; !rc && c < e->nchunks; c++) {
		off[0] = e->chunks[c].first;
		if (H5Dwrite_chunk(ds, H5P_DEFAULT, 0, off, e->chunks[c].size, pt->zbuf[c]) < 0)
			rc = h5_fail(err, dataset, pt->name);
		if (!pt->borrowed)
			free(pt->zbuf[c]);
		pt->zbuf[c] = NULL;
	}
	if (ds >= 0)
		H5Dclose(ds);
	H5Pclose(lcpl);
	H5Pclose(dcpl);
	H5Tclose(type);
	H5Sclose(sp);
	return rc;
}

/* Chunk byte offsets are known once HDF5 has placed the chunks. */
static int locate_chunks(hid_t file, const struct part *pt, const char *dataset, mt_error *err)
{
	hid_t ds = H5Dopen2(file, pt->name, H5P_DEFAULT);
	if (ds < 0)
		return h5_fail(err, dataset, pt->name);
	int rc = 0;
	hsize_t off[MT_MAX_RANK + 1] = {0};
	for (size_t c = 0; c < pt->entry->nchunks; c++) {
		mt_chunk *k = &pt->entry->chunks[c];
		unsigned mask = 0;
		haddr_t addr = 0;
		hsize_t size = 0;
		off[0] = k->first;
		if (H5Dget_chunk_info_by_coord(ds, off, &mask, &addr, &size) < 0) {
			rc = h5_fail(err, dataset, pt->name);
			break;
		}
		if (size != k->size || mask != 0 || addr == HADDR_UNDEF) {
			rc = mti_err(err, MT_EHDF5, "dataset %s: shard: %s chunk %zu was not stored as "
				    "written", dataset, pt->name, c);
			break;
		}
		k->offset = addr;
	}
	H5Dclose(ds);
	return rc;
}

static int write_index(hid_t file, const mt_buf *ix, uint64_t *offset, const char *dataset,
		       mt_error *err)
{
	hsize_t n = ix->len;
	hid_t sp = H5Screate_simple(1, &n, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5Pset_obj_track_times(dcpl, 0);
	H5Pset_layout(dcpl, H5D_CONTIGUOUS);
	H5Pset_alloc_time(dcpl, H5D_ALLOC_TIME_EARLY);
	hid_t ds = H5Dcreate2(file, INDEX_DATASET, H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl,
			      H5P_DEFAULT);
	int rc = 0;
	if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, ix->data) < 0)
		rc = h5_fail(err, dataset, INDEX_DATASET);
	if (!rc) {
		haddr_t a = H5Dget_offset(ds);
		if (a == HADDR_UNDEF)
			rc = h5_fail(err, dataset, INDEX_DATASET);
		*offset = a;
	}
	if (ds >= 0)
		H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(sp);
	return rc;
}

/* Lay out the HDF5 datasets of every attribute and their chunk grids. */
static int plan_parts(const mt_attr *attrs, size_t nattrs, uint64_t rows,
		      const mt_shard_col *cols, uint64_t chunk_bytes, struct part *parts,
		      mt_index *ix, mt_error *err)
{
	size_t np = 0;
	for (size_t i = 0; i < nattrs; i++) {
		const mt_attr *a = &attrs[i];
		for (int sub = 0; sub < (a->ragged ? 2 : 1); sub++) {
			struct part *pt = &parts[np];
			mt_index_entry *e = &ix->e[np];
			ix->n = np + 1;
			pt->attr = a;
			pt->entry = e;
			if (!a->ragged) {
				snprintf(pt->name, sizeof pt->name, "%s", a->name);
				pt->dtype = a->dtype;
				pt->rank = a->rank;
				e->units = rows;
				pt->data = cols[i].data;
			} else if (sub == 0) {
				snprintf(pt->name, sizeof pt->name, "%s/values", a->name);
				pt->dtype = a->dtype;
				pt->rank = a->rank;
				e->units = cols[i].offsets[rows];
				pt->data = cols[i].data;
			} else {
				snprintf(pt->name, sizeof pt->name, "%s/offsets", a->name);
				pt->dtype = MT_INT64;
				pt->rank = 0;
				e->units = rows + 1;
				pt->data = (const uint8_t *)cols[i].offsets;
			}
			for (int d = 0; d < pt->rank; d++)
				e->shape[d] = pt->shape[d] = a->shape[d];
			e->rank = pt->rank;
			e->dtype = pt->dtype;
			e->unit_bytes = mt_dtype_size(pt->dtype);
			for (int d = 0; d < pt->rank; d++)
				e->unit_bytes *= pt->shape[d];
			if (!(e->name = mti_strdup(pt->name)))
				return mti_err(err, MT_ENOMEM, "out of memory");
			uint64_t cu = chunk_bytes / e->unit_bytes;
			e->chunk_units = cu < 1 ? 1 : cu > e->units ? (e->units ? e->units : 1) : cu;
			e->nchunks = (size_t)((e->units + e->chunk_units - 1) / e->chunk_units);
			e->chunks = calloc(e->nchunks ? e->nchunks : 1, sizeof *e->chunks);
			pt->zbuf = calloc(e->nchunks ? e->nchunks : 1, sizeof *pt->zbuf);
			if (!e->chunks || !pt->zbuf)
				return mti_err(err, MT_ENOMEM, "out of memory");
			for (size_t c = 0; c < e->nchunks; c++) {
				e->chunks[c].first = c * e->chunk_units;
				uint64_t left = e->units - e->chunks[c].first;
				e->chunks[c].count = left < e->chunk_units ? left : e->chunk_units;
			}
			np++;
		}
	}
	return 0;
}

static atomic_uint shard_serial;

/* The core driver's buffer, taken over when the file closes instead of
 * being copied out with H5Fget_file_image and freed. */
struct image_grab {
	void *mem;
	size_t cap;  /* bytes allocated for the open file's image */
	void *spare; /* an earlier image's buffer, used if large enough */
	size_t spare_cap;
};

static void *grab_malloc(size_t size, H5FD_file_image_op_t op, void *ud)
{
	struct image_grab *g = ud;
	if (g->spare && size <= g->spare_cap) {
		void *p = g->spare;
		g->cap = g->spare_cap;
		g->spare = NULL;
		return p;
	}
	g->cap = size;
	return malloc(size);
}

static void *grab_memcpy(void *dst, const void *src, size_t size, H5FD_file_image_op_t op,
			 void *ud)
{
	return memcpy(dst, src, size);
}

static void *grab_realloc(void *ptr, size_t size, H5FD_file_image_op_t op, void *ud)
{
	struct image_grab *g = ud;
	if (!ptr)
		return grab_malloc(size, op, ud);
	if (size <= g->cap)
		return ptr;
	void *p = realloc(ptr, size);
	if (p)
		g->cap = size;
	return p;
}

static herr_t grab_free(void *ptr, H5FD_file_image_op_t op, void *ud)
{
	struct image_grab *g = ud;
	if (op == H5FD_FILE_IMAGE_OP_FILE_CLOSE && !g->mem)
		g->mem = ptr;
	else
		free(ptr);
	return 0;
}

static void *grab_udata_copy(void *ud)
{
	return ud;
}

static herr_t grab_udata_free(void *ud)
{
	return 0;
}

/* Assemble the HDF5 file in memory from the compressed chunks. */
static int assemble(const char *dataset, uint64_t rows, struct part *parts, size_t nparts,
		    mt_index *ix, int level, uint64_t zbytes, mt_buf *reuse, mt_shard_image *out,
		    mt_error *err)
{
	/* HDF5 prints its error stack unless told not to, per thread. */
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	char fname[64];
	snprintf(fname, sizeof fname, "matorage-shard-%u.h5", atomic_fetch_add(&shard_serial, 1));
	hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
	/* One allocation for the whole image: growing it would copy it again. */
	H5Pset_fapl_core(fapl, (size_t)(zbytes + (1u << 20)), 0);
	struct image_grab grab = {NULL, 0, reuse->data, reuse->cap};
	*reuse = (mt_buf){0};
	H5FD_file_image_callbacks_t cb = {grab_malloc,	   grab_memcpy,	    grab_realloc,
					  grab_free,	   grab_udata_copy, grab_udata_free,
					  &grab};
	H5Pset_file_image_callbacks(fapl, &cb);
	hid_t file = H5Fcreate(fname, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
	H5Pclose(fapl);
	if (file < 0) {
		free(grab.spare);
		return h5_fail(err, dataset, "create file image");
	}
	int rc = 0;
	hid_t root = H5Gopen2(file, "/", H5P_DEFAULT);
	if (root < 0 || h5_attr_u64(root, "matorage_format", MT_FORMAT_VERSION) ||
	    h5_attr_string(root, "dataset", dataset) || h5_attr_u64(root, "rows", rows))
		rc = h5_fail(err, dataset, "root attributes");
	if (root >= 0)
		H5Gclose(root);
	for (size_t p = 0; !rc && p < nparts; p++)
		rc = write_part(file, &parts[p], level, dataset, err);
	if (!rc && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
		rc = h5_fail(err, dataset, "flush");
	for (size_t p = 0; !rc && p < nparts; p++)
		rc = locate_chunks(file, &parts[p], dataset, err);
	mt_buf enc = {0};
	if (!rc)
		rc = mti_index_encode(ix, &enc, err);
	if (!rc)
		rc = write_index(file, &enc, &out->index_offset, dataset, err);
	out->index_bytes = enc.len;
	if (!rc)
		out->index_xxh3 = mti_get_u64(enc.data + enc.len - 8);
	mti_buf_free(&enc);
	if (!rc && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
		rc = h5_fail(err, dataset, "flush");
	ssize_t n = rc ? -1 : H5Fget_file_image(file, NULL, 0);
	if (!rc && n <= 0)
		rc = h5_fail(err, dataset, "file image size");
	if (H5Fclose(file) < 0 && !rc)
		rc = h5_fail(err, dataset, "close file image");
	free(grab.spare);
	if (!rc && !grab.mem)
		rc = mti_err(err, MT_EHDF5, "dataset %s: shard: HDF5 kept the file image", dataset);
	if (rc) {
		free(grab.mem);
		return rc;
	}
	out->image.data = grab.mem;
	out->image.len = (size_t)n;
	out->image.cap = grab.cap;
	return 0;
}

int mti_shard_build(const char *dataset, const mt_attr *attrs, size_t nattrs, uint64_t rows,
		   const mt_shard_col *cols, uint64_t chunk_bytes, int level, int threads,
		   mt_shard_image *out, mt_error *err)
{
	mt_buf reuse = out->image;
	memset(out, 0, sizeof *out);
	int rc = mti_zstd_filter_register(err);
	if (rc) {
		mti_buf_free(&reuse);
		return rc;
	}
	size_t nparts = 0;
	for (size_t i = 0; i < nattrs; i++)
		nparts += attrs[i].ragged ? 2 : 1;
	struct part *parts = calloc(nparts ? nparts : 1, sizeof *parts);
	mt_index ix = {0, calloc(nparts ? nparts : 1, sizeof(mt_index_entry)), MT_INDEX_VERSION,
		       rows, 0, NULL};
	size_t *first_job = calloc(nparts + 1, sizeof *first_job);
	mt_error *errs = NULL;
	if (!parts || !ix.e || !first_job) {
		rc = mti_err(err, MT_ENOMEM, "dataset %s: shard: out of memory", dataset);
		goto done;
	}
	rc = plan_parts(attrs, nattrs, rows, cols, chunk_bytes, parts, &ix, err);
	if (rc)
		goto done;
	size_t njobs = 0;
	for (size_t p = 0; p < nparts; p++) {
		first_job[p] = njobs;
		njobs += parts[p].entry->nchunks;
		for (size_t c = 0; c < parts[p].entry->nchunks; c++)
			out->raw_bytes += parts[p].entry->chunks[c].count * parts[p].entry->unit_bytes;
	}
	first_job[nparts] = njobs;
	errs = calloc(njobs ? njobs : 1, sizeof *errs);
	if (!errs) {
		rc = mti_err(err, MT_ENOMEM, "dataset %s: shard: out of memory", dataset);
		goto done;
	}
	struct compress_job cj = {parts, nparts, first_job, level, errs};
	rc = mti_parallel_for(threads, njobs, compress_one, &cj);
	if (rc) {
		for (size_t j = 0; j < njobs; j++)
			if (errs[j].code) {
				rc = mti_err_copy(err, &errs[j]);
				break;
			}
		goto done;
	}
	uint64_t zbytes = 0;
	for (size_t p = 0; p < nparts; p++)
		for (size_t c = 0; c < parts[p].entry->nchunks; c++)
			zbytes += parts[p].entry->chunks[c].size;
	rc = assemble(dataset, rows, parts, nparts, &ix, level, zbytes, &reuse, out, err);
	if (!rc)
		rc = mti_sha256_hex(out->image.data, out->image.len, out->sha256, err);
done:
	for (size_t p = 0; parts && p < nparts; p++) {
		for (size_t c = 0; parts[p].zbuf && c < parts[p].entry->nchunks; c++)
			free(parts[p].zbuf[c]);
		free(parts[p].zbuf);
	}
	mti_index_clear(&ix);
	free(parts);
	free(first_job);
	free(errs);
	mti_buf_free(&reuse);
	if (rc)
		mti_shard_image_free(out);
	return rc;
}

void mti_shard_image_free(mt_shard_image *s)
{
	if (s)
		mti_buf_free(&s->image);
}

/* The parts of a shard as its decoded index describes them, each chunk's
 * compressed bytes borrowed from the shard's `data`; entries are copied
 * into ix2 (the chunk offsets are found again). */
static int rebuild_parts(const mt_index *ix, const uint8_t *data, size_t len, struct part *parts,
			 mt_index *ix2, const char *dataset, mt_error *err)
{
	for (size_t p = 0; p < ix->n; p++) {
		const mt_index_entry *e = &ix->e[p];
		mt_index_entry *c = &ix2->e[p];
		ix2->n = p + 1;
		*c = *e;
		c->name = NULL;
		c->chunks = calloc(e->nchunks ? e->nchunks : 1, sizeof *c->chunks);
		parts[p].zbuf = calloc(e->nchunks ? e->nchunks : 1, sizeof *parts[p].zbuf);
		if (!(c->name = mti_strdup(e->name)) || !c->chunks || !parts[p].zbuf)
			return mti_err(err, MT_ENOMEM, "out of memory");
		if (e->rank < 0 || strlen(e->name) >= sizeof parts[p].name)
			return mti_err(err, MT_EFORMAT, "dataset %s: shard: index entry %s cannot be "
				      "written again (index version 1 or name too long)", dataset,
				      e->name);
		memcpy(c->chunks, e->chunks, e->nchunks * sizeof *c->chunks);
		struct part *pt = &parts[p];
		snprintf(pt->name, sizeof pt->name, "%s", e->name);
		pt->dtype = e->dtype;
		pt->rank = e->rank;
		for (int d = 0; d < e->rank; d++)
			pt->shape[d] = e->shape[d];
		pt->entry = c;
		pt->borrowed = 1;
		for (size_t k = 0; k < e->nchunks; k++) {
			if (e->chunks[k].offset > len || e->chunks[k].size > len - e->chunks[k].offset)
				return mti_err(err, MT_ECORRUPT, "dataset %s: shard: %s chunk %zu lies "
					      "past its end", dataset, e->name, k);
			/* Only read (H5Dwrite_chunk), never freed: pt->borrowed. */
			pt->zbuf[k] = (void *)(uintptr_t)(data + e->chunks[k].offset);
		}
	}
	return 0;
}

int mti_shard_rebuild(const char *dataset, const mt_index *ix, const void *data, size_t len,
		      int level, mt_shard_image *out, mt_error *err)
{
	memset(out, 0, sizeof *out);
	int rc = mti_zstd_filter_register(err);
	if (rc)
		return rc;
	struct part *parts = calloc(ix->n ? ix->n : 1, sizeof *parts);
	mt_index ix2 = {0, calloc(ix->n ? ix->n : 1, sizeof(mt_index_entry)), ix->version,
			ix->rows, 0, NULL};
	if (!parts || !ix2.e)
		rc = mti_err(err, MT_ENOMEM, "dataset %s: shard: out of memory", dataset);
	if (!rc)
		rc = rebuild_parts(ix, data, len, parts, &ix2, dataset, err);
	uint64_t zbytes = 0;
	for (size_t p = 0; !rc && p < ix2.n; p++)
		for (size_t c = 0; c < ix2.e[p].nchunks; c++)
			zbytes += ix2.e[p].chunks[c].size;
	mt_buf reuse = {0};
	if (!rc)
		rc = assemble(dataset, ix->rows, parts, ix2.n, &ix2, level, zbytes, &reuse, out, err);
	if (!rc)
		rc = mti_sha256_hex(out->image.data, out->image.len, out->sha256, err);
	for (size_t p = 0; parts && p < ix2.n; p++)
		free(parts[p].zbuf);
	mti_index_clear(&ix2);
	free(parts);
	if (rc)
		mti_shard_image_free(out);
	return rc;
}
