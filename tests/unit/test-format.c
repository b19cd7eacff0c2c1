/* test-format.c — format 1 in memory: the manifest JSON codec, attribute checks and the chunk index codec. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "codec.h"
#include "format.h"
#include "tap.h"

#define SHA_A "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define SHA_B "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
#define SHA_C "fd61a03af4f77d870fc21e05e7e80678095c92d808cfb3b5c279ee04c74aca13"

static mt_attr attrs[] = {
	{"image", MT_UINT8, 2, {28, 28}, 0},
	{"tokens", MT_INT32, 0, {0}, 1},
	{"label", MT_INT64, 0, {0}, 0},
	{"emb.v-2", MT_FLOAT16, 3, {2, 3, 4}, 1},
};

/* The third entry is as manifests before index_xxh3 wrote it. */
static mt_mshard shards[] = {
	{SHA_A, 4031221, 1000, 0, 4027901, 3312, 1, 0x0123456789abcdefull},
	{SHA_B, 999, 24, 1000, 100, 899, 1, 0xfedcba9876543210ull},
	{SHA_C, 1ull << 40, 3000000000ull, 1024, (1ull << 40) - 64, 64, 0, 0},
};

/* mt_manifest's strings are not const: give it writable copies. */
static char tag0[] = "images", tag1[] = "fashion ü";
static char *tags[] = {tag0, tag1};
static char dataset[] = "mnist", version[] = "v2", parent[] = "v1", author[] = "ana";
static char version_v2[] = "v2";
static char created[] = "2026-11-22T18:00:00.123Z";
static char description[] = "Zürich ☃ 日本 — \"quoted\"\n\ttab \\ slash";

static mt_manifest sample(void)
{
	return (mt_manifest){
		.format = 1,
		.dataset = dataset,
		.version = version,
		.parent = parent,
		.created = created,
		.author = author,
		.description = description,
		.tags = tags,
		.ntags = 2,
		.rows = 3000001024ull,
		.raw_bytes = 123456789012ull,
		.level = 3,
		.chunk_bytes = 1048576,
		.attrs = attrs,
		.nattrs = 4,
		.shards = shards,
		.nshards = 3,
	};
}

/* The exact encoding of sample() without its checksum: compact, keys in
 * the documented order, "ragged" and "index_xxh3" only when there. */
static const char sample_json[] =
	"{\"format\":1,\"dataset\":\"mnist\",\"version\":\"v2\",\"parent\":\"v1\","
	"\"created\":\"2026-11-22T18:00:00.123Z\",\"author\":\"ana\","
	"\"description\":\"Zürich ☃ 日本 — \\\"quoted\\\"\\n\\ttab \\\\ slash\","
	"\"tags\":[\"images\",\"fashion ü\"],\"rows\":3000001024,\"raw_bytes\":123456789012,"
	"\"compression\":{\"codec\":\"zstd\",\"level\":3,\"chunk_bytes\":1048576},"
	"\"attributes\":[{\"name\":\"image\",\"dtype\":\"uint8\",\"shape\":[28,28]},"
	"{\"name\":\"tokens\",\"dtype\":\"int32\",\"shape\":[],\"ragged\":true},"
	"{\"name\":\"label\",\"dtype\":\"int64\",\"shape\":[]},"
	"{\"name\":\"emb.v-2\",\"dtype\":\"float16\",\"shape\":[2,3,4],\"ragged\":true}],"
	"\"shards\":[{\"sha256\":\"" SHA_A "\",\"bytes\":4031221,\"rows\":1000,\"first_row\":0,"
	"\"index\":[4027901,3312],\"index_xxh3\":\"0123456789abcdef\"},"
	"{\"sha256\":\"" SHA_B "\",\"bytes\":999,\"rows\":24,\"first_row\":1000,"
	"\"index\":[100,899],\"index_xxh3\":\"fedcba9876543210\"},"
	"{\"sha256\":\"" SHA_C "\",\"bytes\":1099511627776,\"rows\":3000000000,"
	"\"first_row\":1024,\"index\":[1099511627712,64]}]}";

static int attrs_equal(const mt_attr *a, const mt_attr *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (strcmp(a[i].name, b[i].name) || a[i].dtype != b[i].dtype ||
		    a[i].rank != b[i].rank || !a[i].ragged != !b[i].ragged)
			return 0;
		for (int d = 0; d < a[i].rank; d++)
			if (a[i].shape[d] != b[i].shape[d])
				return 0;
	}
	return 1;
}

static int manifests_equal(const mt_manifest *a, const mt_manifest *b)
{
	if (a->format != b->format || strcmp(a->dataset, b->dataset) ||
	    strcmp(a->version, b->version) || strcmp(a->parent, b->parent) ||
	    strcmp(a->created, b->created) || strcmp(a->author, b->author) ||
	    strcmp(a->description, b->description) || a->ntags != b->ntags ||
	    a->rows != b->rows || a->raw_bytes != b->raw_bytes || a->level != b->level ||
	    a->chunk_bytes != b->chunk_bytes || a->nattrs != b->nattrs || a->nshards != b->nshards)
		return 0;
	for (size_t i = 0; i < a->ntags; i++)
		if (strcmp(a->tags[i], b->tags[i]))
			return 0;
	return attrs_equal(a->attrs, b->attrs, a->nattrs) &&
	       memcmp(a->shards, b->shards, a->nshards * sizeof *a->shards) == 0;
}

/* text (a manifest without checksum) with the checksum member the format
 * defines: sha256 of text, inserted before the closing brace. */
static char *sealed(const char *text)
{
	char hex[MT_SHA256_HEX];
	mt_error err;
	size_t n = strlen(text);
	mti_sha256_hex(text, n, hex, &err);
	char *s = malloc(n + 100);
	snprintf(s, n + 100, "%.*s,\"checksum\":\"sha256:%s\"}", (int)(n - 1), text, hex);
	return s;
}

static void test_roundtrip(void)
{
	mt_manifest m = sample();
	char *json = NULL;
	mt_error err;
	if (!TAP_CALL(mti_manifest_encode(&m, &json, &err), &err, "encode a full manifest"))
		return;
	char *want = sealed(sample_json);
	tap_ok(strcmp(json, want) == 0, "encoding is compact, ordered, exact, checksum last");
	if (strcmp(json, want))
		tap_diag("got %s", json);
	free(want);
	mt_manifest *d = NULL;
	if (TAP_CALL(mti_manifest_decode(json, strlen(json), "datasets/mnist/versions/v2.json", &d,
					&err), &err, "decode it")) {
		tap_ok(manifests_equal(&m, d),
		       "every field survives: names, unicode text, tags, ragged, 2^40 numbers");
		char *again = NULL;
		mti_manifest_encode(d, &again, &err);
		tap_ok(again && strcmp(again, json) == 0, "decode then encode gives the same text");
		free(again);
		mti_manifest_free(d);
	}
	free(json);

	/* Optional fields may be missing; empty lists are fine. */
	const char *minimal =
		"{\"format\":1,\"dataset\":\"d\",\"version\":\"v1\",\"created\":\"x\","
		"\"rows\":0,\"raw_bytes\":0,\"compression\":{\"codec\":\"zstd\",\"level\":1,"
		"\"chunk_bytes\":1},\"attributes\":[{\"name\":\"a\",\"dtype\":\"bool\","
		"\"shape\":[]}],\"shards\":[],\"future_field\":{\"x\":1}}";
	d = NULL;
	if (TAP_CALL(mti_manifest_decode(minimal, strlen(minimal), "min", &d, &err), &err,
		     "a manifest without parent, author, description, tags or shards, with an "
		     "unknown field, decodes"))
		tap_ok(!strcmp(d->parent, "") && !strcmp(d->author, "") && d->ntags == 0 &&
		       d->nshards == 0 && d->rows == 0 && d->attrs[0].ragged == 0,
		       "missing text reads as \"\", missing tags as none");
	mti_manifest_free(d);
	mti_manifest_free(NULL);
}

/* The optional recipe: encoded after the shards, decoded in argument order,
 * absent when the version has none. */
static void test_recipe(void)
{
	mt_manifest m = sample();
	char a0[] = "csv=data/x.csv", a1[] = "empty=", a2[] = "eq=a=b", bad[] = "novalue";
	char *args[] = {a0, a1, a2};
	memcpy(m.recipe, SHA_A, 65);
	m.recipe_args = args;
	m.nrecipe_args = 3;
	char *json = NULL;
	mt_error err;
	if (!TAP_CALL(mti_manifest_encode(&m, &json, &err), &err, "encode a manifest with a recipe"))
		return;
	const char *tail = ",\"recipe\":{\"sha256\":\"" SHA_A "\",\"args\":{\"csv\":"
			   "\"data/x.csv\",\"empty\":\"\",\"eq\":\"a=b\"}},\"checksum\":\"";
	const char *at = strstr(json, tail);
	tap_ok(at && strlen(at) == strlen(tail) + 7 + 64 + 2,
	       "the recipe is {sha256, args} with the arguments as a JSON object in order, "
	       "just before the checksum");
	mt_manifest *d = NULL;
	if (TAP_CALL(mti_manifest_decode(json, strlen(json), "with-recipe", &d, &err), &err,
		     "decode it")) {
		tap_ok(!strcmp(d->recipe, SHA_A) && d->nrecipe_args == 3 &&
			       !strcmp(d->recipe_args[0], "csv=data/x.csv") &&
			       !strcmp(d->recipe_args[1], "empty=") &&
			       !strcmp(d->recipe_args[2], "eq=a=b"),
		       "sha256 and arguments survive, in order");
		mti_manifest_free(d);
	}
	free(json);
	m.nrecipe_args = 0;
	memcpy(m.recipe, "", 1);
	mti_manifest_encode(&m, &json, &err);
	tap_ok(json && !strstr(json, "recipe"), "a version without a recipe has no recipe field");
	free(json);
	args[0] = bad;
	memcpy(m.recipe, SHA_A, 65);
	m.nrecipe_args = 1;
	tap_ok(mti_manifest_encode(&m, &json, &err) == MT_EINVAL && strstr(err.message, "recipe"),
	       "an argument that is not KEY=VALUE cannot be encoded (%s)", err.message);
}

/* The optional sources: the store only when another, decoded in order, and
 * a bad entry refused naming it. */
static void test_sources(void)
{
	mt_manifest m = sample();
	mt_source src[] = { { "raw", "v3", "" }, { "far", "v1", "s3://b/p" } };
	m.sources = src;
	m.nsources = 2;
	char *json = NULL;
	mt_error err;
	if (!TAP_CALL(mti_manifest_encode(&m, &json, &err), &err, "encode a manifest with sources"))
		return;
	tap_ok(strstr(json, ",\"sources\":[{\"dataset\":\"raw\",\"version\":\"v3\"},"
			    "{\"dataset\":\"far\",\"version\":\"v1\",\"store\":\"s3://b/p\"}],"
			    "\"checksum\"") != NULL,
	       "sources are [{dataset, version[, store]}], the store only when another");
	mt_manifest *d = NULL;
	if (TAP_CALL(mti_manifest_decode(json, strlen(json), "with-sources", &d, &err), &err,
		     "decode it")) {
		tap_ok(d->nsources == 2 && !strcmp(d->sources[0].dataset, "raw") &&
			       !strcmp(d->sources[0].store, "") &&
			       !strcmp(d->sources[1].version, "v1") &&
			       !strcmp(d->sources[1].store, "s3://b/p"),
		       "sources survive, in order, a missing store as \"\"");
		mti_manifest_free(d);
	}
	free(json);
	const char *bad =
		"{\"format\":1,\"dataset\":\"d\",\"version\":\"v1\",\"created\":\"x\","
		"\"rows\":0,\"raw_bytes\":0,\"compression\":{\"codec\":\"zstd\",\"level\":1,"
		"\"chunk_bytes\":1},\"attributes\":[{\"name\":\"a\",\"dtype\":\"bool\","
		"\"shape\":[]}],\"shards\":[],\"sources\":[{\"dataset\":\"x\"}]}";
	d = NULL;
	tap_ok(mti_manifest_decode(bad, strlen(bad), "bad", &d, &err) == MT_EFORMAT && !d &&
	       strstr(err.message, "version"),
	       "a source without a version is refused (%s)", err.message);
}

static void test_encode_errors(void)
{
	mt_manifest m = sample();
	char untouched[] = "untouched";
	char *json = untouched;
	mt_error err;
	char bad_utf8[] = {'a', (char)0xff, 'b', 0};
	m.description = bad_utf8;
	int rc = mti_manifest_encode(&m, &json, &err);
	tap_ok(rc == MT_EINVAL && json == NULL && strstr(err.message, "description") &&
	       strstr(err.message, "mnist@v2"),
	       "text that is not UTF-8 is refused, naming the field: %s", err.message);
	m = sample();
	m.rows = (uint64_t)INT64_MAX + 1;
	rc = mti_manifest_encode(&m, &json, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "rows"),
	       "a count JSON cannot hold is refused: %s", err.message);
	mt_mshard big[1] = {shards[0]};
	big[0].index_bytes = UINT64_MAX;
	m = sample();
	m.shards = big;
	m.nshards = 1;
	rc = mti_manifest_encode(&m, &json, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "shards"),
	       "so is a shard field past 2^63: %s", err.message);
}

/* ---- 100 000 shards ------------------------------------------------------- */

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

#define NBIG 100000

static void test_big(void)
{
	mt_manifest m = sample();
	mt_mshard *sh = calloc(NBIG, sizeof *sh);
	uint64_t row = 0;
	for (size_t i = 0; i < NBIG; i++) {
		/* Realistic magnitudes: 64 MiB shards of 65536 rows, 10^9+ rows in all. */
		for (int k = 0; k < 64; k++)
			sh[i].sha256[k] =
				"0123456789abcdef"[(i * 7 + (size_t)k * 13 + i / 16) % 16];
		sh[i].bytes = 67108864 + i;
		sh[i].rows = 65536;
		sh[i].first_row = row;
		sh[i].index_offset = 67000000 + i;
		sh[i].index_bytes = 13312;
		sh[i].has_index_xxh3 = 1;
		sh[i].index_xxh3 = 0x9e3779b97f4a7c15ull * (i + 1);
		row += sh[i].rows;
	}
	m.shards = sh;
	m.nshards = NBIG;
	m.rows = row;
	char *json = NULL;
	mt_error err;
	double t0 = now();
	int rc = mti_manifest_encode(&m, &json, &err);
	double t1 = now();
	if (!TAP_CALL(rc, &err, "encode a manifest of 100000 shards")) {
		free(sh);
		return;
	}
	size_t len = strlen(json);
	double per = (double)len / NBIG;
	tap_diag("100000 shards: %zu bytes, %.1f bytes per shard; encode %.0f ms", len, per,
		 (t1 - t0) * 1e3);
	tap_ok(per <= 200, "a shard entry costs <= 200 bytes (%.1f)", per);
	mt_manifest *d = NULL;
	t0 = now();
	rc = mti_manifest_decode(json, len, "big", &d, &err);
	t1 = now();
	tap_diag("decode %.0f ms", (t1 - t0) * 1e3);
	if (TAP_CALL(rc, &err, "decode it"))
		tap_ok(d->nshards == NBIG && d->rows == row &&
		       memcmp(d->shards, sh, NBIG * sizeof *sh) == 0,
		       "all 100000 shard entries come back");
	mti_manifest_free(d);
	free(json);
	free(sh);
}

/* ---- decode errors -------------------------------------------------------- */

/* sample_json with the first `from` replaced by `to` (NULL when `from` is
 * not there: the case then fails rather than testing nothing). */
static char *mutate(const char *from, const char *to)
{
	const char *at = strstr(sample_json, from);
	if (!at) {
		tap_diag("'%s' is not in the sample", from);
		return NULL;
	}
	size_t head = (size_t)(at - sample_json), n = strlen(sample_json) - strlen(from) +
								   strlen(to);
	char *s = malloc(n + 1);
	memcpy(s, sample_json, head);
	strcpy(s + head, to);
	strcat(s, at + strlen(from));
	return s;
}

#define KEY "datasets/mnist/versions/v2.json"

/* Decode a mutation; it must fail with `code` and a message that starts
 * with the key and holds every string in `needles` ('|'-separated). */
static void refuse(const char *name, const char *from, const char *to, int code,
		   const char *needles)
{
	char *json = mutate(from, to);
	mt_manifest *m = (mt_manifest *)&m;
	mt_error err = {0};
	int rc = json ? mti_manifest_decode(json, strlen(json), KEY, &m, &err) : 1;
	int ok = rc == code && m == NULL && strncmp(err.message, KEY ": ", strlen(KEY) + 2) == 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", needles);
	for (char *p = strtok(buf, "|"); ok && p; p = strtok(NULL, "|"))
		ok = strstr(err.message, p) != NULL;
	tap_ok(ok, "%s: %s", name, err.message);
	if (rc == 0)
		mti_manifest_free(m);
	free(json);
}

/* The shard list as matorage writes it is scanned without jansson; any
 * other spelling goes through jansson.  Both read the same manifest. */
static void test_fast_shards(void)
{
	mt_manifest *fast = NULL, *slow = NULL, *two = NULL;
	mt_error err;
	char *spaced = mutate("\"shards\":[", "\"shards\": [");
	char *twice = mutate("\"tags\":[", "\"extra\":{\"shards\":[]},\"tags\":[");
	int ok = spaced && twice &&
		 !mti_manifest_decode(sample_json, strlen(sample_json), KEY, &fast, &err) &&
		 !mti_manifest_decode(spaced, strlen(spaced), KEY, &slow, &err) &&
		 !mti_manifest_decode(twice, strlen(twice), KEY, &two, &err);
	tap_ok(ok, "the list as written, spaced, and beside another \"shards\" decode");
	ok = ok && fast->nshards == 3 && slow->nshards == fast->nshards &&
	     two->nshards == fast->nshards &&
	     !memcmp(fast->shards, slow->shards, fast->nshards * sizeof *fast->shards) &&
	     !memcmp(fast->shards, two->shards, fast->nshards * sizeof *fast->shards) &&
	     manifests_equal(fast, slow);
	tap_ok(ok, "the scanned shards equal jansson's, field by field");
	mti_manifest_free(fast);
	mti_manifest_free(slow);
	mti_manifest_free(two);
	free(spaced);
	free(twice);
	int F = MT_EFORMAT;
	refuse("an unknown member in a shard goes through jansson", "\"first_row\":1024,",
	       "\"first_row\":1024,\"x\":1,\"rows\":2,", F, "invalid JSON|rows");
	refuse("a leading zero is invalid JSON", "\"bytes\":4031221", "\"bytes\":04031221", F,
	       "invalid JSON");
	refuse("a shard number past 2^63 is invalid JSON", "\"bytes\":4031221",
	       "\"bytes\":9223372036854775808", F, "invalid JSON");
	refuse("an exponent is not an integer", "\"rows\":24", "\"rows\":24e0", F,
	       "shards[1].rows: expected a non-negative integer");
	refuse("a trailing comma in the list is invalid JSON", "64]}]}", "64]},]}", F,
	       "invalid JSON");
	refuse("a list cut short is invalid JSON", sample_json, "{\"shards\":[{\"sha256\":\"",
	       F, "invalid JSON");
}

static void test_decode_errors(void)
{
	int F = MT_EFORMAT;
	refuse("a recipe's sha256 must be 64 hex digits", "]}]}",
	       "]}],\"recipe\":{\"sha256\":\"abc\",\"args\":{}}}", F, "recipe.sha256");
	refuse("recipe arguments must be strings", "]}]}",
	       "]}],\"recipe\":{\"sha256\":\"" SHA_A "\",\"args\":{\"n\":1}}}", F,
	       "recipe.args.n: expected a string");
	refuse("recipe args must be an object", "]}]}",
	       "]}],\"recipe\":{\"sha256\":\"" SHA_A "\",\"args\":[]}}", F,
	       "recipe.args: expected an object");
	refuse("invalid JSON names line and column", "\"rows\":3000001024,", "\"rows\":30x,", F,
	       "invalid JSON at line 1, column");
	refuse("trailing garbage is invalid JSON", "]}]}", "]}]}}", F, "invalid JSON");
	refuse("a duplicate JSON key is refused", "\"author\":\"ana\"",
	       "\"author\":\"ana\",\"author\":\"bob\"", F, "invalid JSON|author");
	refuse("a number past 2^63 is refused", "\"raw_bytes\":123456789012",
	       "\"raw_bytes\":99999999999999999999", F, "invalid JSON");
	refuse("a newer format is named as such", "\"format\":1", "\"format\":3", F,
	       "format 3 is newer than this matorage understands (2)");
	refuse("format 2^32+1 is not format 1", "\"format\":1", "\"format\":4294967297", F,
	       "format 4294967297 is newer");
	refuse("format 0 is refused", "\"format\":1", "\"format\":0", F, "format: 0");
	refuse("format must be a number", "\"format\":1", "\"format\":\"1\"", F,
	       "format: expected an integer");
	refuse("an unknown dtype is named", "\"dtype\":\"int32\"", "\"dtype\":\"complex64\"", F,
	       "attributes[1].dtype|complex64");
	refuse("an upper-case sha256 is refused", SHA_B,
	       "60303AE22B998861BCE3B28F33EEC1BE758A213C86C93C076DBE9F558C11C752", F,
	       "shards[1].sha256");
	refuse("a short sha256 is refused", SHA_C "\"", "fd61\"", F, "shards[2].sha256");
	refuse("rows must equal the shards' sum", "\"rows\":3000001024", "\"rows\":3000001025", F,
	       "rows: is 3000001025|3000001024");
	refuse("first_row must be the running sum", "\"first_row\":1024", "\"first_row\":1023", F,
	       "shards[2].first_row: is 1023|1024");
	refuse("a duplicate attribute is named with its twin", "\"name\":\"label\"",
	       "\"name\":\"image\"", F, "attributes[2].name|also names attributes[0]");
	refuse("a negative number is refused", "\"bytes\":4031221", "\"bytes\":-4031221", F,
	       "shards[0].bytes: expected a non-negative integer");
	refuse("a fractional number is refused", "\"rows\":24", "\"rows\":24.0", F,
	       "shards[1].rows: expected a non-negative integer");
	refuse("an index outside its shard is refused", "\"index\":[100,899]",
	       "\"index\":[101,899]", F, "shards[1].index|outside|999");
	refuse("an index whose end overflows is refused", "\"index\":[100,899]",
	       "\"index\":[9223372036854775807,899]", F, "shards[1].index");
	refuse("an index must be [offset, length]", "\"index\":[100,899]", "\"index\":[100]", F,
	       "shards[1].index: expected");
	refuse("a zero-row shard is refused", "\"rows\":24", "\"rows\":0", F, "shards[1].rows");
	refuse("a shard must be an object", "{\"sha256\":\"" SHA_B, "7,{\"x\":\"" SHA_B, F,
	       "shards[1]: expected an object");
	refuse("a non-string tag is named", "\"fashion ü\"", "7", F, "tags[1]: expected a string");
	refuse("tags must be an array", "[\"images\",\"fashion ü\"]", "\"images\"", F,
	       "tags: expected an array");
	refuse("a non-string author is refused", "\"author\":\"ana\"", "\"author\":null", F,
	       "author: expected a string");
	refuse("a missing version is refused", "\"version\":\"v2\",", "", F,
	       "version: expected a string");
	refuse("a bad dataset name is refused", "\"dataset\":\"mnist\"", "\"dataset\":\"a/b\"", F,
	       "dataset name 'a/b'");
	refuse("a bad parent name is refused", "\"parent\":\"v1\"", "\"parent\":\".v1\"", F,
	       "parent version name");
	refuse("a reserved attribute name is refused", "\"name\":\"label\"", "\"name\":\"_label\"",
	       F, "attributes[2]|reserved");
	refuse("a bad attribute name is refused", "\"name\":\"label\"", "\"name\":\"a b\"", F,
	       "attributes[2]|attribute name 'a b'");
	refuse("a zero dimension is named", "\"shape\":[28,28]", "\"shape\":[28,0]", F,
	       "attributes[0].shape[1]: expected an integer >= 1");
	refuse("more than 8 dimensions are refused", "\"shape\":[28,28]",
	       "\"shape\":[1,1,1,1,1,1,1,1,1]", F, "attributes[0].shape|at most 8");
	refuse("a row over 2^40 bytes is refused", "\"shape\":[28,28]",
	       "\"shape\":[1048576,1048577]", F, "attributes[0]|2^40");
	refuse("ragged must be a boolean", "\"ragged\":true", "\"ragged\":1", F,
	       "attributes[1].ragged");
	refuse("attributes must not be empty", "\"attributes\":[{", "\"attributes\":[],\"x\":[{",
	       F, "attributes: expected a non-empty array");
	refuse("only zstd is known", "\"codec\":\"zstd\"", "\"codec\":\"lz4\"", F,
	       "compression.codec");
	refuse("the level must be zstd's", "\"level\":3", "\"level\":23", F, "compression.level");
	refuse("chunk_bytes must be positive", "\"chunk_bytes\":1048576", "\"chunk_bytes\":0", F,
	       "compression.chunk_bytes");
	refuse("shards must be an array", "\"shards\":[", "\"shards\":\"x\",\"y\":[", F,
	       "shards: expected an array");
	refuse("the top level must be an object", sample_json, "[1,2]", F,
	       "expected a JSON object");
	refuse("a NUL inside a string is refused", "\"author\":\"ana\"", "\"author\":\"a\\u0000b\"",
	       F, "invalid JSON");
	refuse("index_xxh3 must be lowercase hex", "\"index_xxh3\":\"0123456789abcdef\"",
	       "\"index_xxh3\":\"0123456789ABCDEF\"", F, "shards[0].index_xxh3");
	refuse("index_xxh3 must be 16 digits", "\"index_xxh3\":\"fedcba9876543210\"",
	       "\"index_xxh3\":\"fedcba987654321\"", F, "shards[1].index_xxh3");
	refuse("index_xxh3 must be a string", "\"index_xxh3\":\"0123456789abcdef\"",
	       "\"index_xxh3\":81985529216486895", F, "shards[0].index_xxh3");

	mt_manifest *m;
	mt_error err;
	int rc = mti_manifest_decode("", 0, KEY, &m, &err);
	tap_ok(rc == F && strstr(err.message, KEY), "empty input: %s", err.message);
	rc = mti_manifest_decode(sample_json, 40, KEY, &m, &err);
	tap_ok(rc == F && strstr(err.message, "invalid JSON"), "truncated input: %s", err.message);
}

/* ---- the manifest's checksum ---------------------------------------------- */

/* `text` with its first `from` replaced by `to`. */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	if (!at)
		return NULL;
	size_t head = (size_t)(at - text), n = strlen(text) - strlen(from) + strlen(to);
	char *s = malloc(n + 1);
	memcpy(s, text, head);
	strcpy(s + head, to);
	strcat(s, at + strlen(from));
	return s;
}

/* Decoding `json` fails with MT_ECORRUPT, naming the key and `needle`. */
static void corrupt(const char *name, char *json, const char *needle)
{
	mt_manifest *m = NULL;
	mt_error err = {0};
	int rc = json ? mti_manifest_decode(json, strlen(json), KEY, &m, &err) : 1;
	tap_ok(rc == MT_ECORRUPT && !m &&
		       !strncmp(err.message, KEY ": checksum: ", strlen(KEY) + 12) &&
		       strstr(err.message, needle),
	       "%s: %s", name, err.message);
	if (rc == 0)
		mti_manifest_free(m);
	free(json);
}

static void test_checksum(void)
{
	mt_manifest m = sample();
	char *json = NULL;
	mt_error err = {0};
	if (!TAP_CALL(mti_manifest_encode(&m, &json, &err), &err, "encode for the checksum tests"))
		return;
	const char *sum = strstr(json, ",\"checksum\":\"sha256:");
	tap_ok(sum && strlen(sum) == 86, "the checksum is the last member, 64 hex digits");
	mt_manifest *d = NULL;
	if (TAP_CALL(mti_manifest_decode(json, strlen(json), KEY, &d, &err), &err,
		     "a manifest with a good checksum decodes"))
		tap_ok(d->shards[0].has_index_xxh3 &&
			       d->shards[0].index_xxh3 == 0x0123456789abcdefull &&
			       d->shards[1].index_xxh3 == 0xfedcba9876543210ull &&
			       !d->shards[2].has_index_xxh3,
		       "index_xxh3 comes back where it was written, and only there");
	mti_manifest_free(d);

	corrupt("one changed letter", replace(json, "\"author\":\"ana\"", "\"author\":\"anb\""),
		"changed after it was written");
	corrupt("an edited dtype is an edit, not a bad field",
		replace(json, "\"dtype\":\"int32\"", "\"dtype\":\"int64\""), "changed after");
	corrupt("edited rows are an edit, not a bad row count",
		replace(json, "\"rows\":3000001024", "\"rows\":3000001025"), "changed after");
	char *other = strdup(json);
	char *digit = other + strlen(other) - 66; /* the first digit of the checksum itself */
	*digit = *digit == '0' ? '1' : '0';
	corrupt("a changed checksum", other, "changed after");
	corrupt("a checksum rewritten with spaces",
		replace(json, ",\"checksum\":\"", ", \"checksum\": \""), "must end the text");
	char *moved = malloc(strlen(json) + 1);
	snprintf(moved, strlen(json) + 1, "{%.84s,%.*s}", sum + 1, (int)(sum - json - 1), json + 1);
	corrupt("a checksum that is not the last member", moved, "must end the text");
	char *nl = malloc(strlen(json) + 2);
	sprintf(nl, "%s\n", json);
	corrupt("a newline after the closing brace", nl, "must end the text");
	corrupt("a checksum that is not a string",
		replace(json, sum, ",\"checksum\":7}"), "must end the text");

	/* Without its checksum the text decodes as a manifest written before it. */
	char *old = strndup(json, (size_t)(sum - json));
	char *plain = malloc(strlen(old) + 2);
	sprintf(plain, "%s}", old);
	d = NULL;
	TAP_CALL(mti_manifest_decode(plain, strlen(plain), KEY, &d, &err), &err,
		 "a manifest without checksum decodes");
	mti_manifest_free(d);
	free(plain);
	free(old);
	free(json);
}

/* ---- attribute lists a writer is given ------------------------------------ */

static void test_attrs(void)
{
	mt_error err;
	TAP_CALL(mti_attrs_check(attrs, 4, &err), &err, "a good attribute list passes");
	struct {
		const char *why;
		mt_attr a;
		const char *needle;
	} bad[] = {
		{"a name starting with '_' is reserved", {"_x", MT_INT8, 0, {0}, 0}, "reserved"},
		{"a name starting with '.'", {".x", MT_INT8, 0, {0}, 0}, "start"},
		{"a name with '/'", {"a/b", MT_INT8, 0, {0}, 0}, "a/b"},
		{"an empty name", {"", MT_INT8, 0, {0}, 0}, "1 to 128"},
		{"no name", {NULL, MT_INT8, 0, {0}, 0}, "1 to 128"},
		{"the invalid dtype", {"x", MT_DTYPE_INVALID, 0, {0}, 0}, "dtype"},
		{"an out-of-range dtype", {"x", (mt_dtype)99, 0, {0}, 0}, "dtype"},
		{"rank 9", {"x", MT_INT8, 9, {0}, 0}, "rank 9"},
		{"a negative rank", {"x", MT_INT8, -1, {0}, 0}, "rank -1"},
		{"a zero dimension (fixed)", {"x", MT_INT8, 2, {3, 0}, 0}, "dimension 1"},
		{"a zero dimension (ragged item)", {"x", MT_INT8, 1, {0}, 1}, "dimension 0"},
		{"a row of 2^40+ bytes", {"x", MT_FLOAT64, 2, {1 << 20, (1 << 17) + 1}, 0}, "2^40"},
		{"a shape whose product overflows", {"x", MT_INT8, 2, {1ull << 63, 4}, 0}, "2^40"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		mt_attr list[2] = {attrs[0], bad[i].a};
		int rc = mti_attrs_check(list, 2, &err);
		tap_ok(rc == MT_EINVAL && strstr(err.message, bad[i].needle), "refused: %s: %s",
		       bad[i].why, err.message);
	}
	mt_attr dup[3] = {attrs[0], attrs[1], attrs[0]};
	int rc = mti_attrs_check(dup, 3, &err);
	tap_ok(rc == MT_EINVAL && strstr(err.message, "image appears twice"),
	       "refused: a duplicate name: %s", err.message);
	mt_attr max = {"x", MT_UINT8, 2, {1 << 20, 1 << 20}, 0};
	TAP_CALL(mti_attrs_check(&max, 1, &err), &err, "a row of exactly 2^40 bytes passes");

	mt_attr *c = NULL;
	rc = mti_attrs_dup(attrs, 4, &c);
	tap_ok(rc == 0 && attrs_equal(attrs, c, 4) && c[0].name != attrs[0].name,
	       "mti_attrs_dup copies the list and its names");
	mti_attrs_free(c, 4);
	mti_attrs_free(NULL, 0);
}

static void test_keys(void)
{
	char *k = mti_key_manifest("mnist", "v2");
	tap_ok(k && !strcmp(k, "datasets/mnist/versions/v2.json"), "manifest key: %s", k);
	free(k);
	k = mti_key_shard("mnist", SHA_A);
	tap_ok(k && !strcmp(k, "datasets/mnist/shards/" SHA_A ".h5"), "shard key: %s", k);
	free(k);
}

/* ---- chunk index ------------------------------------------------------ */

static char ix_name0[] = "image", ix_name1[] = "tokens/values";
static mt_chunk ix_chunks0[] = {
	{4096, 1000, 0, 256, 11}, {5096, 900, 256, 256, 22}, {5996, 10, 512, 3, 33}};
static mt_chunk ix_chunks1[] = {{6006, 77, 0, 40, 44}};

static mt_index sample_index(mt_index_entry *e, uint32_t v)
{
	e[0] = (mt_index_entry){.name = ix_name0, .dtype = MT_UINT8, .unit_bytes = 784,
				.chunk_units = 256, .units = 515, .nchunks = 3,
				.chunks = ix_chunks0, .rank = 2, .shape = {28, 28}};
	e[1] = (mt_index_entry){.name = ix_name1, .dtype = MT_INT32, .unit_bytes = 4,
				.chunk_units = 1024, .units = 40, .nchunks = 1,
				.chunks = ix_chunks1, .rank = 0};
	return (mt_index){.n = 2, .e = e, .version = v, .rows = 515};
}

/* Offsets into the sample's encoding (see doc/FORMAT.md): the header (12
 * bytes, 20 in version 2), entry 0's name length and name, its dtype,
 * (version 2) rank and two dimensions, the 32 bytes of its chunk grid,
 * 40 per chunk. */
static size_t ix_e0_dtype(uint32_t v)
{
	return (v == 1 ? 12 : 20) + 4 + 5;
}
static size_t ix_e0_grid(uint32_t v)
{
	return ix_e0_dtype(v) + (v == 1 ? 4 : 4 + 4 + 16);
}
static size_t ix_e0_chunk(uint32_t v, size_t c)
{
	return ix_e0_grid(v) + 32 + 40 * c;
}

static void reseal(mt_buf *b)
{
	mti_put_u64(b->data + b->len - 8, mti_xxh3(b->data, b->len - 8));
}

static int decode_fails(const mt_buf *b, uint64_t shard_bytes, int code, const char *needle,
			const char *what)
{
	mt_index *ix = NULL;
	mt_error err = {0};
	int rc = mti_index_decode(b->data, b->len, shard_bytes, "shard abc", &ix, &err);
	int ok = rc == code && ix == NULL && strstr(err.message, "shard abc") &&
		 (!needle || strstr(err.message, needle));
	tap_ok(ok, "index: %s -> %d: %s", what, rc, err.message);
	mti_index_free(ix);
	return ok;
}

static void test_index_roundtrip(uint32_t v)
{
	mt_index_entry e[2];
	mt_index in = sample_index(e, v);
	mt_buf b = {0};
	mt_error err = {0};
	TAP_CALL(mti_index_encode(&in, &b, &err), &err, "index v%u: encode", v);
	size_t want = v == 1 ? 12 + (4 + 5 + 36 + 3 * 40) + (4 + 13 + 36 + 40) + 8
			     : 20 + (4 + 5 + 40 + 16 + 3 * 40) + (4 + 13 + 40 + 40) + 8;
	tap_ok(b.len == want, "index v%u: encoded size %zu (%zu)", v, b.len, want);
	mt_index *out = NULL;
	TAP_CALL(mti_index_decode(b.data, b.len, 6083, "s", &out, &err), &err, "index v%u: decode",
		 v);
	int same = out && out->n == 2 && out->version == v && out->rows == (v == 1 ? 0 : 515) &&
		   out->xxh3 == mti_get_u64(b.data + b.len - 8);
	for (size_t i = 0; same && i < 2; i++) {
		const mt_index_entry *a = &in.e[i], *o = &out->e[i];
		same = !strcmp(a->name, o->name) && a->dtype == o->dtype &&
		       a->unit_bytes == o->unit_bytes && a->chunk_units == o->chunk_units &&
		       a->units == o->units && a->nchunks == o->nchunks &&
		       !memcmp(a->chunks, o->chunks, a->nchunks * sizeof *a->chunks) &&
		       o->rank == (v == 1 ? -1 : a->rank) &&
		       (v == 1 || !memcmp(a->shape, o->shape, sizeof a->shape));
	}
	tap_ok(same, "index v%u: decodes to what was encoded%s", v,
	       v == 1 ? " (no shape, no rows)" : ", shapes and rows included");
	tap_ok(out && mti_index_find(out, "tokens/values") == &out->e[1] &&
		       !mti_index_find(out, "tokens") && !mti_index_find(out, "image/"),
	       "index v%u: find by exact name", v);
	mti_index_free(out);

	/* An empty index (a shard of 0 rows has entries without chunks). */
	mt_chunk none[1];
	mt_index_entry z = {.name = ix_name0, .dtype = MT_FLOAT64, .unit_bytes = 8,
			    .chunk_units = 1, .chunks = none};
	mt_index zi = {.n = 1, .e = &z, .version = v};
	mt_buf zb = {0};
	TAP_CALL(mti_index_encode(&zi, &zb, &err), &err, "index v%u: encode 0 rows", v);
	out = NULL;
	TAP_CALL(mti_index_decode(zb.data, zb.len, 0, "s", &out, &err), &err,
		 "index v%u: decode 0 rows", v);
	tap_ok(out && out->n == 1 && out->e[0].nchunks == 0 && out->e[0].units == 0,
	       "index v%u: 0 rows round trip", v);
	mti_index_free(out);
	mti_buf_free(&zb);
	mti_buf_free(&b);
}

static void test_index_errors(uint32_t v)
{
	mt_index_entry e[2];
	mt_index in = sample_index(e, v);
	mt_buf good = {0}, b = {0};
	mt_error err = {0};
	TAP_CALL(mti_index_encode(&in, &good, &err), &err, "index v%u: encode", v);

	/* Every truncation is refused, none reads past the end. */
	int all = 1;
	for (size_t n = 0; n < good.len; n++) {
		mt_index *ix = NULL;
		if (mti_index_decode(good.data, n, 0, "s", &ix, &err) != MT_ECORRUPT || ix)
			all = 0;
		mti_index_free(ix);
	}
	tap_ok(all, "index v%u: all %zu truncations refused as corrupt", v, good.len);

	/* Every single flipped byte is caught (by the checksum or a check). */
	all = 1;
	for (size_t i = 0; i < good.len; i++) {
		mt_index *ix = NULL;
		good.data[i] ^= 0x10;
		if (mti_index_decode(good.data, good.len, 0, "s", &ix, &err) == 0)
			all = 0;
		good.data[i] ^= 0x10;
		mti_index_free(ix);
	}
	tap_ok(all, "index v%u: every flipped byte refused", v);

#define MUTATE(stmt, shard_bytes, code, needle, what)                                    \
	do {                                                                              \
		b.len = 0;                                                                \
		mti_buf_append(&b, good.data, good.len);                                   \
		stmt;                                                                     \
		reseal(&b);                                                               \
		decode_fails(&b, shard_bytes, code, needle, what);                        \
	} while (0)

	size_t dt = ix_e0_dtype(v), grid = ix_e0_grid(v);
	MUTATE(memcpy(b.data, "MTIY", 4), 0, MT_ECORRUPT, "bad magic", "bad magic");
	b.len = 0;
	mti_buf_append(&b, good.data, good.len);
	b.data[ix_e0_chunk(v, 0) + 8] ^= 1;
	decode_fails(&b, 0, MT_ECORRUPT, "checksum", "flipped bit, old checksum");
	MUTATE(mti_put_u32(b.data + 4, 3), 0, MT_EFORMAT, "version 3", "future version");
	MUTATE(mti_put_u32(b.data + 8, 1000000), 0, MT_ECORRUPT, "cannot fit", "entry count");
	MUTATE(mti_put_u32(b.data + 8, 1), 0, MT_ECORRUPT, "trailing", "fewer entries than bytes");
	MUTATE(mti_put_u32(b.data + dt - 9, 100000), 0, MT_ECORRUPT, "entry 0", "name too long");
	MUTATE(mti_put_u32(b.data + dt, 99), 0, MT_ECORRUPT, "unknown dtype", "unknown dtype");
	MUTATE(mti_put_u64(b.data + grid + 8, 0), 0, MT_ECORRUPT, "zero chunk", "zero chunk units");
	MUTATE(mti_put_u64(b.data + grid + 16, 516), 0, MT_ECORRUPT, "515 units, not 516",
	       "units disagree with chunks");
	MUTATE(mti_put_u64(b.data + grid + 24, 1ull << 40), 0, MT_ECORRUPT, "cut short",
	       "huge chunk count");
	MUTATE(mti_put_u64(b.data + ix_e0_chunk(v, 1) + 16, 300), 0, MT_ECORRUPT, "chunk 1",
	       "chunk out of order");
	MUTATE(mti_put_u64(b.data + ix_e0_chunk(v, 0) + 24, 257), 0, MT_ECORRUPT, "chunk 0",
	       "chunk larger than the chunk shape");
	MUTATE(mti_put_u64(b.data + ix_e0_chunk(v, 2) + 8, 0), 0, MT_ECORRUPT, "chunk 2",
	       "empty chunk");
	MUTATE(mti_put_u64(b.data + ix_e0_chunk(v, 0), UINT64_MAX - 10), 0, MT_ECORRUPT, "chunk 0",
	       "offset + size overflows");
	MUTATE((void)0, 6082, MT_ECORRUPT, "tokens/values", "chunk past the end of the shard");
	if (v == 2) {
		MUTATE(mti_put_u32(b.data + dt + 4, 9), 0, MT_ECORRUPT, "rank", "rank 9");
		MUTATE(mti_put_u64(b.data + dt + 8, 27), 0, MT_ECORRUPT, "not its 784 bytes",
		       "a shape that is not the unit size");
		MUTATE(mti_put_u64(b.data + dt + 16, 0), 0, MT_ECORRUPT, "not its 784 bytes",
		       "a zero dimension");
		MUTATE(mti_put_u64(b.data + dt + 8, 1ull << 62), 0, MT_ECORRUPT, "not its 784 bytes",
		       "a shape whose size overflows");
	}
#undef MUTATE
	mti_buf_free(&b);
	mti_buf_free(&good);
	mt_index bad = in;
	bad.version = 3;
	tap_ok(mti_index_encode(&bad, &b, &err) == MT_EINVAL, "index: version 3 cannot be encoded");
	mti_buf_free(&b);
}

/* ---- a shard's chunk index against its manifest ------------------------ */

static char bx[] = "x", bt_values[] = "t/values", bt_offsets[] = "t/offsets";
static mt_chunk bchunks[3][1] = {{{100, 10, 0, 5, 1}}, {{110, 10, 0, 9, 2}}, {{120, 10, 0, 6, 3}}};

/* Shard 1 of a manifest of two 5-row shards: x float32[16], t ragged int16[3]. */
struct bound {
	mt_attr attrs[2];
	mt_mshard shards[2];
	mt_manifest m;
	mt_index_entry e[3];
	mt_index ix;
	mt_buf enc;
};

static void bound_init(struct bound *b, uint32_t v)
{
	memset(b, 0, sizeof *b);
	b->attrs[0] = (mt_attr){"x", MT_FLOAT32, 1, {16}, 0};
	b->attrs[1] = (mt_attr){"t", MT_INT16, 1, {3}, 1};
	b->e[0] = (mt_index_entry){.name = bx, .dtype = MT_FLOAT32, .unit_bytes = 64,
				   .chunk_units = 5, .units = 5, .nchunks = 1,
				   .chunks = bchunks[0], .rank = 1, .shape = {16}};
	b->e[1] = (mt_index_entry){.name = bt_values, .dtype = MT_INT16, .unit_bytes = 6,
				   .chunk_units = 9, .units = 9, .nchunks = 1,
				   .chunks = bchunks[1], .rank = 1, .shape = {3}};
	b->e[2] = (mt_index_entry){.name = bt_offsets, .dtype = MT_INT64, .unit_bytes = 8,
				   .chunk_units = 6, .units = 6, .nchunks = 1,
				   .chunks = bchunks[2], .rank = 0};
	b->ix = (mt_index){.n = 3, .e = b->e, .version = v, .rows = 5};
	b->m = (mt_manifest){.dataset = dataset, .version = version_v2,
			     .attrs = b->attrs, .nattrs = 2, .shards = b->shards, .nshards = 2,
			     .rows = 10};
	b->shards[0] = (mt_mshard){SHA_A, 1000, 5, 0, 900, 100, 0, 0};
	b->shards[1] = (mt_mshard){SHA_B, 1000, 5, 5, 900, 100, 0, 0};
}

/* Encode b's index; with `hash`, the manifest records its xxh3. */
static void bound_seal(struct bound *b, int hash)
{
	mt_error err;
	b->enc.len = 0;
	mti_index_encode(&b->ix, &b->enc, &err);
	b->shards[1].has_index_xxh3 = hash;
	b->shards[1].index_xxh3 = mti_get_u64(b->enc.data + b->enc.len - 8);
}

/* Decoding shard 1 passes (needle NULL) or fails with MT_ECORRUPT saying needle. */
static void bound_check(struct bound *b, const char *needle, const char *name)
{
	mt_index *ix = NULL;
	mt_error err = {0};
	int rc = mti_index_decode_shard(b->enc.data, b->enc.len, 1000, &b->m, 1,
				       "mnist@v2: shard 1: " SHA_B, &ix, &err);
	if (!needle)
		tap_ok(rc == 0 && ix, "bound: %s (%s)", name, err.message);
	else
		tap_ok(rc == MT_ECORRUPT && !ix && strstr(err.message, "mnist@v2: shard 1: ") &&
			       strstr(err.message, needle),
		       "bound: %s: %s", name, err.message);
	mti_index_free(ix);
}

static void test_bound(void)
{
	struct bound b;
	bound_init(&b, 2);
	bound_seal(&b, 1);
	bound_check(&b, NULL, "an index that matches its manifest passes");
	b.attrs[0].dtype = MT_INT32;
	bound_check(&b, "x: the manifest says int32[16], the shard's chunk index says float32[16]",
		    "float32 -> int32 is named");
	b.attrs[0].dtype = MT_FLOAT32;
	b.attrs[0] = (mt_attr){"x", MT_FLOAT32, 2, {4, 4}, 0};
	bound_check(&b, "x: the manifest says float32[4,4], the shard's chunk index says "
		    "float32[16]", "[16] -> [4,4] is named");
	b.attrs[0] = (mt_attr){"x", MT_FLOAT32, 1, {16}, 0};
	b.attrs[1].shape[0] = 1;
	b.attrs[1].dtype = MT_INT64; /* the same item size */
	bound_check(&b, "t/values: the manifest says int64[1]", "a ragged item's type is named");
	b.attrs[1] = (mt_attr){"t", MT_INT16, 1, {3}, 1};
	b.shards[1].rows = 4;
	bound_check(&b, "the manifest says 4 rows, the shard's chunk index says 5",
		    "rows are checked");
	b.shards[1].rows = 5;
	b.attrs[1].ragged = 0;
	bound_check(&b, "has no 't'", "a ragged attribute made fixed is caught");
	b.attrs[1].ragged = 1;
	b.m.nattrs = 1;
	bound_check(&b, "holds 3 datasets, the manifest's attributes make 1",
		    "an attribute dropped from the manifest is caught");
	b.m.nattrs = 2;
	b.shards[1].index_xxh3 ^= 1;
	bound_check(&b, "is not the one the manifest names", "another shard's index is caught");
	b.shards[1].has_index_xxh3 = 0;
	bound_check(&b, NULL, "without index_xxh3 (older manifests) the hash is not checked");
	mti_buf_free(&b.enc);

	/* Version 1 records no shape and no rows: a reshape of the same size
	 * passes, a dtype or row count that differs does not. */
	bound_init(&b, 1);
	bound_seal(&b, 1);
	bound_check(&b, NULL, "v1 index: a matching manifest passes");
	b.attrs[0] = (mt_attr){"x", MT_FLOAT32, 2, {4, 4}, 0};
	bound_check(&b, NULL, "v1 index: [16] -> [4,4] cannot be seen (documented)");
	b.attrs[0] = (mt_attr){"x", MT_FLOAT32, 1, {8}, 0};
	bound_check(&b, "the manifest says float32[8], the shard's chunk index says float32, 64 "
		    "bytes a unit", "v1 index: [16] -> [8] is caught by the unit size");
	b.attrs[0] = (mt_attr){"x", MT_INT32, 1, {16}, 0};
	bound_check(&b, "says int32[16]", "v1 index: float32 -> int32 is caught");
	b.attrs[0] = (mt_attr){"x", MT_FLOAT32, 1, {16}, 0};
	b.shards[1].rows = 4;
	bound_check(&b, "x: the manifest makes it 4 rows, the shard's chunk index 5",
		    "v1 index: rows are caught by the units");
	mti_buf_free(&b.enc);
}

/* ---- format 2: a root and its fragments ---------------------------------- */

/* A store of fragments in memory; `tamper` changes what get hands back. */
enum { F2_AS_IS, F2_MISSING, F2_TRUNCATED, F2_SWAPPED, F2_EDITED };
struct f2_store {
	char *keys[32], *texts[32];
	size_t n;
	int tamper;
	const char *victim; /* the key tampered with */
	size_t gets;
};

static int f2_get(void *ud, const char *key, uint64_t max, void **data, size_t *len, mt_error *err)
{
	struct f2_store *st = ud;
	st->gets++;
	(void)max;
	for (size_t i = 0; i < st->n; i++) {
		if (strcmp(st->keys[i], key))
			continue;
		int hit = st->victim && !strcmp(key, st->victim);
		if (hit && st->tamper == F2_MISSING)
			break;
		const char *t = hit && st->tamper == F2_SWAPPED ? st->texts[(i + 1) % st->n] : st->texts[i];
		*len = strlen(t) - (hit && st->tamper == F2_TRUNCATED ? 7 : 0);
		*data = malloc(*len + 1);
		memcpy(*data, t, *len);
		if (hit && st->tamper == F2_EDITED) {
			char *d = strstr(*data, "\"bytes\":");
			d[8] = d[8] == '9' ? '8' : '9';
		}
		return 0;
	}
	return mti_err(err, MT_ENOTFOUND, "%s: not found", key);
}

static mt_mshard f2_shards[11];

/* 11 shards of 5.. rows; the first n get first_row set. */
static mt_manifest f2_sample(size_t n)
{
	uint64_t row = 0;
	for (size_t i = 0; i < n; i++) {
		char seed[32];
		mt_error err;
		snprintf(seed, sizeof seed, "s%zu", i);
		f2_shards[i] = (mt_mshard){.bytes = 1000 + i, .rows = 5 + i, .first_row = row,
					   .index_offset = 900, .index_bytes = 100,
					   .has_index_xxh3 = 1, .index_xxh3 = 0x1234 + i};
		mti_sha256_hex(seed, strlen(seed), f2_shards[i].sha256, &err);
		row += 5 + i;
	}
	mt_manifest m = sample();
	m.format = 2;
	m.shards = f2_shards;
	m.nshards = n;
	m.rows = row;
	return m;
}

/* Cut m into fragments of `per`, store the fresh ones in st and encode the root. */
static char *f2_commit(mt_manifest *m, const mt_mfrag *prev, size_t nprev, struct f2_store *st)
{
	mt_error err;
	char *json = NULL;
	if (mti_manifest_cut(m, prev, nprev, 4, &err))
		return NULL;
	for (size_t i = 0; i < m->nfrags; i++) {
		mt_mfrag *f = &m->frags[i];
		char *text = NULL;
		if (!f->fresh)
			continue;
		if (mti_fragment_encode(m->dataset, m->shards + f->first_shard, f->nshards, f, &text,
					&err))
			return NULL;
		st->keys[st->n] = mti_key_fragment(m->dataset, f->sha256);
		st->texts[st->n++] = text;
	}
	return mti_manifest_encode(m, &json, &err) ? NULL : json;
}

static void test_format2_roundtrip(struct f2_store *st, mt_mfrag **v1frags, size_t *nv1)
{
	mt_manifest m = f2_sample(10);
	mt_error err;
	char *json = f2_commit(&m, NULL, 0, st);
	tap_ok(json && m.nfrags == 3 && m.frags[0].nshards == 4 && m.frags[2].nshards == 2 &&
	       m.frags[1].first_row == f2_shards[4].first_row && st->n == 3,
	       "10 shards cut 4 a fragment: 3 fragments (4, 4, 2), each stored");
	tap_ok(json && strstr(json, "\"format\":2") && strstr(json, "\"nshards\":10,\"fragments\":[") &&
	       !strstr(json, "\"shards\":"), "the root names fragments, not shards");
	mt_manifest *d = NULL;
	if (!TAP_CALL(mti_manifest_decode(json, strlen(json), "v2.json", &d, &err), &err,
		      "the root decodes")) {
		free(json);
		free(m.frags);
		return;
	}
	tap_ok(d->format == 2 && d->nfrags == 3 && d->nshards == 10 && !d->frags[0].loaded &&
	       d->shards[0].rows == 0, "decoded, its shards wait for their fragments");
	tap_ok(mti_manifest_frag_of_row(d, f2_shards[5].first_row) == 1 &&
	       mti_manifest_frag_of_row(d, 0) == 0 && mti_manifest_frag_of_shard(d, 9) == 2 &&
	       mti_manifest_frag_of_row(d, d->rows - 1) == 2, "fragments found by row and shard");
	st->gets = 0;
	TAP_CALL(mti_manifest_load_frags(d, 1, 2, f2_get, st, &err), &err, "load fragment 1 alone");
	tap_ok(st->gets == 1 && d->frags[1].loaded && !d->frags[0].loaded && !d->frags[2].loaded &&
	       !memcmp(&d->shards[4], &f2_shards[4], 4 * sizeof *f2_shards),
	       "one read, its four shards in place, the others not read");
	TAP_CALL(mti_manifest_load_frags(d, 0, d->nfrags, f2_get, st, &err), &err, "load the rest");
	tap_ok(st->gets == 3 && !memcmp(d->shards, f2_shards, 10 * sizeof *f2_shards),
	       "every shard entry as written (a loaded fragment is not read again)");
	*v1frags = d->frags;
	*nv1 = d->nfrags;
	d->frags = NULL;
	mti_manifest_free(d);
	free(m.frags);
	free(json);
}

static void test_format2_append(struct f2_store *st, const mt_mfrag *prev, size_t nprev)
{
	mt_manifest m = f2_sample(11);
	size_t before = st->n;
	char *json = f2_commit(&m, prev, nprev, st);
	tap_ok(json && m.nfrags == 3 && !m.frags[0].fresh && !m.frags[1].fresh && m.frags[2].fresh &&
	       m.frags[2].nshards == 3 && st->n == before + 1 &&
	       !memcmp(m.frags[0].sha256, prev[0].sha256, 64),
	       "an append of a shard reuses the two full fragments and writes one");
	f2_shards[0].rows++;
	mt_mfrag *cut = NULL;
	mt_error err;
	mt_manifest o = m;
	o.frags = NULL;
	o.nfrags = 0;
	if (!mti_manifest_cut(&o, prev, nprev, 4, &err))
		cut = o.frags;
	tap_ok(cut && o.nfrags == 3 && o.frags[0].fresh && o.frags[1].fresh,
	       "shards that differ from the parent's get fragments of their own");
	f2_shards[0].rows--;
	free(cut);
	free(m.frags);
	free(json);
}

/* A root whose fragment `victim` is tampered with as `how`. */
static void f2_bad(struct f2_store *st, const char *json, int how, const char *victim,
		   const char *want, const char *what)
{
	mt_manifest *d = NULL;
	mt_error err = {0};
	mti_manifest_decode(json, strlen(json), "v2.json", &d, &err);
	st->tamper = how;
	st->victim = victim;
	int rc = d ? mti_manifest_load_frags(d, 0, d->nfrags, f2_get, st, &err) : -1;
	tap_ok(rc == MT_ECORRUPT && strstr(err.message, "mnist@v2: fragment ") &&
	       strstr(err.message, victim) && strstr(err.message, "rows 26 to ") &&
	       strstr(err.message, want), "%s: MT_ECORRUPT naming version, key and rows (%s)", what,
	       err.message);
	st->tamper = F2_AS_IS;
	st->victim = NULL;
	mti_manifest_free(d);
}

static void test_format2_hostile(struct f2_store *st)
{
	mt_manifest m = f2_sample(10);
	struct f2_store tmp = {0};
	char *json = f2_commit(&m, NULL, 0, &tmp);
	char *key = json ? mti_key_fragment("mnist", m.frags[1].sha256) : NULL;
	for (size_t i = 0; i < tmp.n; i++) {
		free(tmp.keys[i]);
		free(tmp.texts[i]);
	}
	if (!key) {
		tap_ok(0, "a root to tamper with");
		free(json);
		return;
	}
	f2_bad(st, json, F2_MISSING, key, "missing", "a missing fragment");
	f2_bad(st, json, F2_TRUNCATED, key, "truncated", "a truncated fragment");
	f2_bad(st, json, F2_SWAPPED, key, "swapped", "another fragment's bytes under its key");
	f2_bad(st, json, F2_EDITED, key, "edited", "an edited fragment");
	free(key);
	mt_error err;
	mt_manifest *d = NULL;
	char *root = strndup(json, strlen(json) - 86), *t;
	static const struct { const char *from, *to, *why; } edits[] = {
		{"\"nshards\":10,", "\"nshards\":11,", "nshards other than the fragments hold"},
		{"\"nshards\":10,", "\"nshards\":10,\"shards\":[],", "a root with a shard list"},
		{"\"format\":2", "\"format\":3", "a format newer than this reader"},
		{"\"first_row\":26,", "\"first_row\":27,", "a gap between fragments"},
		{"\"nshards\":4,", "\"nshards\":0,", "a fragment of no shards"},
		{"\"nshards\":4,", "\"nshards\":70000,", "a fragment over the shard cap"},
		{"\"nshards\":10,", "\"nshards\":99999999999,", "a root claiming billions of shards"},
	};
	for (size_t i = 0; root && i < sizeof edits / sizeof edits[0]; i++) {
		const char *at = strstr(root, edits[i].from);
		size_t pre = at ? (size_t)(at - root) : 0;
		char *text = malloc(strlen(root) + 64);
		snprintf(text, strlen(root) + 64, "%.*s%s%s}", (int)pre, root, edits[i].to,
			 at ? at + strlen(edits[i].from) : "");
		t = sealed(text);
		d = NULL;
		int rc = at ? mti_manifest_decode(t, strlen(t), "bad.json", &d, &err) : 0;
		tap_ok(rc == MT_EFORMAT && !d, "%s: MT_EFORMAT (%s)", edits[i].why,
		       rc ? err.message : "decoded");
		mti_manifest_free(d);
		free(text);
		free(t);
	}
	free(root);
	free(m.frags);
	free(json);
}

/* A fragment whose bytes the root binds but whose content lies. */
static void test_format2_lying_fragment(void)
{
	mt_manifest m = f2_sample(10);
	mt_mfrag f = {0};
	char *text = NULL;
	mt_error err;
	mti_fragment_encode("mnist", f2_shards + 4, 4, &f, &text, &err);
	static const struct { const char *from, *to, *why; } edits[] = {
		{"\"dataset\":\"mnist\"", "\"dataset\":\"other\"", "of another dataset"},
		{"\"first_row\":26,\"shards\"", "\"first_row\":0,\"shards\"", "of other rows"},
		{"\"format\":2", "\"format\":1", "of another format"},
		{"\"format\":2", "\"format\":2", "of other stored bytes than the root says"},
	};
	for (size_t i = 0; text && i < sizeof edits / sizeof edits[0]; i++) {
		const char *at = strstr(text, edits[i].from);
		char *bad = malloc(strlen(text) + 64);
		snprintf(bad, strlen(text) + 64, "%.*s%s%s", at ? (int)(at - text) : 0, text,
			 edits[i].to, at ? at + strlen(edits[i].from) : "");
		mt_mfrag g = f;
		g.first_shard = 4;
		mti_sha256_hex(bad, strlen(bad), g.sha256, &err);
		g.bytes = strlen(bad);
		g.shard_bytes += i == 3; /* the last case: the text as is, the root lying */
		mt_mshard room[10];
		mt_manifest r = m;
		r.shards = room;
		r.frags = &g;
		r.nfrags = 1;
		int rc = at ? mti_fragment_decode(&r, 0, bad, strlen(bad), "k", &err) : 0;
		tap_ok(rc == MT_EFORMAT && !g.loaded && strstr(err.message, "mnist@v2: fragment k"),
		       "a fragment %s, bound by the root: refused (%s)", edits[i].why,
		       rc ? err.message : "decoded");
		free(bad);
	}
	free(text);
}

static void test_format2(void)
{
	struct f2_store st = {0};
	mt_mfrag *v1 = NULL;
	size_t nv1 = 0;
	test_format2_roundtrip(&st, &v1, &nv1);
	if (v1)
		test_format2_append(&st, v1, nv1);
	free(v1);
	test_format2_hostile(&st);
	test_format2_lying_fragment();
	for (size_t i = 0; i < st.n; i++) {
		free(st.keys[i]);
		free(st.texts[i]);
	}
}

int main(void)
{
	test_roundtrip();
	test_recipe();
	test_sources();
	test_encode_errors();
	test_big();
	test_decode_errors();
	test_fast_shards();
	test_checksum();
	test_attrs();
	test_keys();
	test_format2();

	test_index_roundtrip(1);
	test_index_roundtrip(2);
	test_index_errors(1);
	test_index_errors(2);
	test_bound();
	return tap_done();
}
