/* craft-shard.c — for crafted.sh: rewrite shard 0 of a version in a file store into a hostile but self-consistent one (index xxh3, sha256, manifest checksum all fixed up); also writes fuzz-shard's inputs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "format.h"

/* A version being rewritten: its manifest, shard 0's bytes and index. */
struct craft {
	mt_manifest *m;
	mt_index *ix;
	mt_buf img;       /* shard 0's bytes; new frames are appended */
	mt_index_entry *e; /* the case's entry: "x", or "t/offsets" for a ragged case */
	mt_buf index;     /* the encoded index, once encoded */
};

static void die(const char *what)
{
	fprintf(stderr, "craft-shard: %s\n", what);
	exit(2);
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		die(path);
	mt_buf b = {0};
	char tmp[65536];
	size_t n;
	while ((n = fread(tmp, 1, sizeof tmp, f)) > 0)
		if (mti_buf_append(&b, tmp, n))
			die("out of memory");
	fclose(f);
	*len = b.len;
	return b.data;
}

static void spill(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f))
		die(path);
}

/* Append bytes to the shard and make chunk k of e hold them. */
static void set_frame(struct craft *c, mt_index_entry *e, size_t k, const void *z, size_t len)
{
	e->chunks[k].offset = c->img.len;
	e->chunks[k].size = len;
	e->chunks[k].xxh3 = mti_xxh3(z, len);
	if (mti_buf_append(&c->img, z, len))
		die("out of memory");
}

static void set_plain(struct craft *c, mt_index_entry *e, size_t k, const void *plain, size_t len)
{
	void *z;
	size_t zlen;
	mt_error err;
	if (mti_zstd_compress(plain, len, 3, &z, &zlen, &err))
		die(err.message);
	set_frame(c, e, k, z, zlen);
	free(z);
}

/* Chunk k of e decoded (chunk_units * unit_bytes bytes, malloc'ed). */
static uint8_t *get_plain(struct craft *c, mt_index_entry *e, size_t k)
{
	size_t full = (size_t)(e->chunk_units * e->unit_bytes);
	uint8_t *p = malloc(full);
	mt_error err;
	const mt_chunk *ch = &e->chunks[k];
	if (!p || mti_zstd_decompress((uint8_t *)c->img.data + ch->offset, (size_t)ch->size, p, full,
				      &err))
		die("cannot decode a chunk");
	return p;
}

/* The entry called name, to edit. */
static mt_index_entry *entry(mt_index *ix, const char *name)
{
	for (size_t i = 0; i < ix->n; i++)
		if (strcmp(ix->e[i].name, name) == 0)
			return &ix->e[i];
	return NULL;
}

static void set_rows(struct craft *c, uint64_t rows)
{
	c->m->rows = rows;
	c->m->shards[0].rows = rows;
	c->ix->rows = rows;
}

/* ---- the cases ---------------------------------------------------------- */

static void c_sound(struct craft *c) { (void)c; }

/* count = units = rows = 2^61 + 125 int64s: count * 8 wraps to 1000 bytes,
 * the 125 values the one frame holds. */
static void c_wrap(struct craft *c)
{
	uint64_t n = (1ull << 61) + 125, v[125];
	for (int i = 0; i < 125; i++)
		v[i] = (uint64_t)i;
	c->e->chunk_units = c->e->units = n;
	c->e->nchunks = 1;
	c->e->chunks[0].first = 0;
	c->e->chunks[0].count = n;
	set_plain(c, c->e, 0, v, sizeof v);
	set_rows(c, n);
}

static void c_rows62(struct craft *c)
{
	uint64_t n = 1ull << 62;
	mt_chunk *last = &c->e->chunks[c->e->nchunks - 1];
	last->count = n - last->first;
	c->e->units = n;
	set_rows(c, n);
}

static void c_units_ne_rows(struct craft *c)
{
	c->e->chunks[c->e->nchunks - 1].count--;
	c->e->units--;
}

/* A frame of RLE blocks declaring 1 GiB, where the index's chunk is a few
 * hundred bytes: 8192 blocks of 128 KiB, 4 bytes each. */
static void c_frame_1g(struct craft *c)
{
	size_t n = 8192, len = 4 + 1 + 8 + 4 * n;
	uint8_t *z = calloc(1, len);
	if (!z)
		die("out of memory");
	mti_put_u32(z, 0xFD2FB528u);
	z[4] = 0xE0; /* 8-byte content size, single segment */
	mti_put_u64(z + 5, 1ull << 30);
	for (size_t b = 0; b < n; b++) {
		uint32_t h = (uint32_t)(b + 1 == n) | (1u << 1) | ((128u << 10) << 3);
		uint8_t *p = z + 13 + 4 * b;
		p[0] = (uint8_t)h;
		p[1] = (uint8_t)(h >> 8);
		p[2] = (uint8_t)(h >> 16);
		p[3] = 7;
	}
	set_frame(c, c->e, 0, z, len);
	free(z);
}

/* A frame that declares the chunk's size and holds one raw block a byte
 * short of it: its header, its block walk and its checksum all pass, and
 * it does not decode. */
static void c_frame_short(struct craft *c)
{
	size_t full = (size_t)(c->e->chunk_units * c->e->unit_bytes), n = full - 1;
	size_t len = 4 + 1 + 8 + 3 + n;
	uint8_t *z = calloc(1, len);
	if (!z)
		die("out of memory");
	mti_put_u32(z, 0xFD2FB528u);
	z[4] = 0xE0; /* 8-byte content size, single segment */
	mti_put_u64(z + 5, full);
	uint32_t h = 1u | (uint32_t)n << 3; /* the last block, raw */
	z[13] = (uint8_t)h;
	z[14] = (uint8_t)(h >> 8);
	z[15] = (uint8_t)(h >> 16);
	set_frame(c, c->e, 0, z, len);
	free(z);
}

static void c_frame_size(struct craft *c)
{
	size_t full = (size_t)(c->e->chunk_units * c->e->unit_bytes) + 8;
	uint8_t *p = calloc(1, full);
	if (!p)
		die("out of memory");
	set_plain(c, c->e, 0, p, full);
	free(p);
}

static void c_frame_truncated(struct craft *c)
{
	mt_chunk *k = &c->e->chunks[0];
	size_t half = (size_t)k->size / 2;
	uint8_t *z = malloc(half);
	if (!z)
		die("out of memory");
	memcpy(z, (uint8_t *)c->img.data + k->offset, half);
	set_frame(c, c->e, 0, z, half);
	free(z);
}

static void c_frame_garbage(struct craft *c)
{
	uint8_t z[64];
	uint32_t s = 12345;
	for (size_t i = 0; i < sizeof z; i++)
		z[i] = (uint8_t)((s = s * 1103515245u + 12345u) >> 16);
	set_frame(c, c->e, 0, z, sizeof z);
}

static void c_not_hdf5(struct craft *c)
{
	memcpy(c->img.data, "NOT-HDF5", 8);
}

/* Ragged offsets, rewritten in chunk k through fn. */
static void edit_offsets(struct craft *c, size_t k, void (*fn)(uint8_t *o, uint64_t n, uint64_t items))
{
	const mt_index_entry *v = mti_index_find(c->ix, "t/values");
	uint8_t *p = get_plain(c, c->e, k);
	fn(p, c->e->chunks[k].count, v ? v->units : 0);
	set_plain(c, c->e, k, p, (size_t)(c->e->chunk_units * c->e->unit_bytes));
	free(p);
}

static void o_start50(uint8_t *o, uint64_t n, uint64_t items) { mti_put_u64(o, 50); }
static void o_decrease(uint8_t *o, uint64_t n, uint64_t items) { mti_put_u64(o + 8 * 5, 0); }
static void o_past(uint8_t *o, uint64_t n, uint64_t items)
{
	mti_put_u64(o + 8 * (n - 1), items + 1000);
}

static void c_off50(struct craft *c) { edit_offsets(c, 0, o_start50); }
static void c_off_decrease(struct craft *c) { edit_offsets(c, 0, o_decrease); }
static void c_off_past(struct craft *c) { edit_offsets(c, c->e->nchunks - 1, o_past); }

static void c_offsets_rows(struct craft *c)
{
	c->e->chunks[c->e->nchunks - 1].count--;
	c->e->units--;
}

static void c_chunk_past_end(struct craft *c) { c->e->chunks[c->e->nchunks - 1].offset = 1ull << 40; }

static void c_overlap(struct craft *c)
{
	mt_chunk *a = &c->e->chunks[0], *b = &c->e->chunks[1];
	b->offset = a->offset;
	b->size = a->size;
	b->xxh3 = a->xxh3;
}

static void c_zero_unit(struct craft *c) { c->e->unit_bytes = 0; }

static void c_shape_unit(struct craft *c)
{
	c->e->rank = 1;
	c->e->shape[0] = 3;
}

static void c_dtype(struct craft *c) { c->e->dtype = MT_FLOAT64; }
static void c_manifest_rows(struct craft *c) { c->m->rows += 5; }

static void c_shard_rows(struct craft *c)
{
	c->m->rows += 10;
	c->m->shards[0].rows += 10;
}

static void c_chunk_units_huge(struct craft *c) { c->e->chunk_units = 1ull << 40; }

static void c_count_over(struct craft *c)
{
	c->e->chunks[0].count++;
	c->e->chunks[1].first++;
	c->e->chunks[1].count--;
}

/* Patches of the encoded index (x is entry 0: "MTIX", version, n, rows,
 * name_len 1, "x", dtype, rank 0, unit_bytes, chunk_units, units, nchunks). */
static void p_nchunks(struct craft *c) { mti_put_u64((uint8_t *)c->index.data + 57, 1ull << 40); }
static void p_name_len(struct craft *c) { mti_put_u32((uint8_t *)c->index.data + 20, 0x7fffffffu); }
static void p_version(struct craft *c) { mti_put_u32((uint8_t *)c->index.data + 4, 3); }
static void p_index_outside(struct craft *c) { c->m->shards[0].index_offset = c->img.len + 100; }

struct kase {
	const char *name, *data; /* data: "f" fixed x int64, "r" ragged t int32 */
	void (*edit)(struct craft *);
	void (*patch)(struct craft *); /* on the encoded index, then the index sealed again */
	const char *about;
};

static const struct kase cases[] = {
	{"sound", "f", c_sound, NULL, "fixed attribute rewritten unchanged (must stay sound)"},
	{"sound-ragged", "r", c_sound, NULL, "ragged attribute rewritten unchanged (must stay sound)"},
	{"wrap", "f", c_wrap, NULL, "count = units = rows = 2^61+125: count*8 wraps to 1000"},
	{"rows-2p62", "f", c_rows62, NULL, "2^62 rows in manifest and index"},
	{"units-ne-rows", "f", c_units_ne_rows, NULL, "index units one short of the rows"},
	{"frame-1g", "f", c_frame_1g, NULL, "a zstd frame declaring 1 GiB, the index 800 bytes"},
	{"frame-size", "f", c_frame_size, NULL, "frame content size 8 bytes over the index's"},
	{"frame-short", "f", c_frame_short, NULL, "a frame declaring the chunk's size, a byte short"},
	{"frame-truncated", "f", c_frame_truncated, NULL, "a frame cut in half"},
	{"frame-garbage", "f", c_frame_garbage, NULL, "64 bytes of garbage as a frame"},
	{"not-hdf5", "f", c_not_hdf5, NULL, "no HDF5 signature at byte 0"},
	{"offsets-start-50", "r", c_off50, NULL, "ragged offsets[0] = 50"},
	{"offsets-decrease", "r", c_off_decrease, NULL, "ragged offsets[5] = 0"},
	{"offsets-past-values", "r", c_off_past, NULL, "last offset past the values' items"},
	{"offsets-units", "r", c_offsets_rows, NULL, "offsets hold rows units, not rows+1"},
	{"chunk-past-end", "f", c_chunk_past_end, NULL, "a chunk at byte 2^40"},
	{"chunks-overlap", "f", c_overlap, NULL, "chunk 1 is chunk 0's bytes"},
	{"zero-unit-bytes", "f", c_zero_unit, NULL, "unit_bytes 0"},
	{"shape-unit", "f", c_shape_unit, NULL, "shape [3] for an 8-byte unit"},
	{"dtype", "f", c_dtype, NULL, "index dtype float64, manifest int64"},
	{"manifest-rows", "f", c_manifest_rows, NULL, "manifest rows 5 over its shards' sum"},
	{"shard-rows", "f", c_shard_rows, NULL, "manifest shard rows 10 over the index's"},
	{"chunk-units-huge", "f", c_chunk_units_huge, NULL, "chunk_units 2^40"},
	{"count-over", "f", c_count_over, NULL, "chunk 0 holds chunk_units + 1 units"},
	{"nchunks-huge", "f", c_sound, p_nchunks, "nchunks 2^40"},
	{"name-too-long", "f", c_sound, p_name_len, "an entry name 2^31 bytes long"},
	{"index-version", "f", c_sound, p_version, "chunk index version 3"},
	{"index-outside", "f", c_sound, p_index_outside, "the manifest's index past the object"},
};

static const struct kase *find_case(const char *name)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		if (strcmp(cases[i].name, name) == 0)
			return &cases[i];
	return NULL;
}

/* Encode the index (patched), append it, and bind shard and manifest to it. */
static void seal(struct craft *c, const struct kase *k)
{
	mt_error err;
	mt_mshard *s = &c->m->shards[0];
	if (mti_index_encode(c->ix, &c->index, &err))
		die(err.message);
	s->index_offset = c->img.len;
	s->index_bytes = c->index.len;
	if (k->patch)
		k->patch(c);
	uint8_t *ib = c->index.data;
	mti_put_u64(ib + c->index.len - 8, mti_xxh3(ib, c->index.len - 8));
	s->index_xxh3 = mti_get_u64(ib + c->index.len - 8);
	s->has_index_xxh3 = 1;
	if (mti_buf_append(&c->img, c->index.data, c->index.len))
		die("out of memory");
	s->bytes = c->img.len;
	if (mti_sha256_hex(c->img.data, c->img.len, s->sha256, &err))
		die(err.message);
}

static void list(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		printf("%s %s %s\n", cases[i].name, cases[i].data, cases[i].about);
}

/* Shard 0 of a version as an input of fuzz/fuzz-shard.c: u32 index offset,
 * u32 index bytes (little-endian), u8 tweak, the shard object.  The tweak
 * asks the target to set the index's and the chunks' xxh3 to the bytes'
 * (so that mutations reach the frames), which keeps a sealed shard as is. */
static void fuzz_input(const char *dir, const char *ds, const char *ver, const char *out)
{
	char path[4096];
	size_t len, slen;
	mt_error err;
	mt_manifest *m;
	snprintf(path, sizeof path, "%s/datasets/%s/versions/%s.json", dir, ds, ver);
	char *json = slurp(path, &len);
	if (mti_manifest_decode(json, len, path, &m, &err))
		die(err.message);
	const mt_mshard *s = &m->shards[0];
	if (s->index_offset > UINT32_MAX || s->index_bytes > UINT32_MAX)
		die("the chunk index lies past 4 GiB");
	snprintf(path, sizeof path, "%s/datasets/%s/shards/%s.h5", dir, ds, s->sha256);
	uint8_t *sh = slurp(path, &slen);
	uint8_t head[9];
	mti_put_u32(head, (uint32_t)s->index_offset);
	mti_put_u32(head + 4, (uint32_t)s->index_bytes);
	head[8] = 8 | 16;
	FILE *f = fopen(out, "wb");
	if (!f || fwrite(head, 1, sizeof head, f) != sizeof head || fwrite(sh, 1, slen, f) != slen ||
	    fclose(f))
		die(out);
	free(sh);
	free(json);
	mti_manifest_free(m);
}

int main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		list();
		return 0;
	}
	if (argc == 6 && strcmp(argv[1], "--fuzz-input") == 0) {
		fuzz_input(argv[2], argv[3], argv[4], argv[5]);
		return 0;
	}
	if (argc != 5)
		die("usage: craft-shard STORE_DIR DATASET VERSION CASE | --list | "
		    "--fuzz-input STORE_DIR DATASET VERSION OUT");
	const char *dir = argv[1], *ds = argv[2], *ver = argv[3];
	const struct kase *k = find_case(argv[4]);
	if (!k)
		die("no such case");
	char path[4096];
	size_t len;
	mt_error err;
	struct craft c = {0};
	snprintf(path, sizeof path, "%s/datasets/%s/versions/%s.json", dir, ds, ver);
	char *json = slurp(path, &len);
	if (mti_manifest_decode(json, len, path, &c.m, &err))
		die(err.message);
	mt_mshard *s = &c.m->shards[0];
	snprintf(path, sizeof path, "%s/datasets/%s/shards/%s.h5", dir, ds, s->sha256);
	c.img.data = slurp(path, &c.img.len);
	c.img.cap = c.img.len;
	if (mti_index_decode((uint8_t *)c.img.data + s->index_offset, (size_t)s->index_bytes,
			     c.img.len, path, &c.ix, &err))
		die(err.message);
	c.e = entry(c.ix, k->data[0] == 'r' ? "t/offsets" : "x");
	if (!c.e || c.e->nchunks < (k->data[0] == 'r' ? 1u : 2u))
		die("the version is not the one crafted.sh makes (x in two chunks or more, or t)");
	k->edit(&c);
	seal(&c, k);
	snprintf(path, sizeof path, "%s/datasets/%s/shards/%s.h5", dir, ds, s->sha256);
	spill(path, c.img.data, c.img.len);
	char *out;
	if (mti_manifest_encode(c.m, &out, &err))
		die(err.message);
	snprintf(path, sizeof path, "%s/datasets/%s/versions/%s.json", dir, ds, ver);
	spill(path, out, strlen(out));
	snprintf(path, sizeof path, "%s/datasets/%s/head.json", dir, ds);
	if (access(path, F_OK) == 0)
		spill(path, out, strlen(out));
	printf("%s\n", s->sha256);
	free(out);
	free(json);
	mti_buf_free(&c.img);
	mti_buf_free(&c.index);
	mti_index_free(c.ix);
	mti_manifest_free(c.m);
	return 0;
}
