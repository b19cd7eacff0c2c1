/* ckpt-bench.c — time saving and loading a model state through the checkpoint API.
 *
 * usage: ckpt-bench STORE DATA.bin NTENSORS REPS
 * DATA.bin is read into memory (not timed) and cut into NTENSORS float32 tensors; each
 * rep saves them, all in one mt_ckpt_add_many as save_checkpoint gives them, as a new
 * checkpoint of a fresh model name (so nothing is deduplicated), then opens it and reads
 * every tensor back (checked against the manifest's xxh3).  Prints one line per rep:
 * "save SECONDS load SECONDS"; then a second checkpoint of bench0 with 5% of the bytes
 * changed: "partial SECONDS changed BYTES written BYTES of BYTES stored BYTES" (the
 * last: bench0's first checkpoint as stored).
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <matorage.h>

#include "bench.h"

static long long dir_total;

static int add_size(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	if (flag == FTW_F)
		dir_total += sb->st_size;
	return 0;
}

/* Bytes of the files under dir. */
static long long dir_bytes(const char *dir)
{
	dir_total = 0;
	return nftw(dir, add_size, 16, FTW_PHYS) == 0 ? dir_total : -1;
}

static int fail(const mt_error *err)
{
	fprintf(stderr, "ckpt-bench: %s\n", err->message);
	return 1;
}

static int save(mt_store *s, const char *name, const char *data, size_t per, int n,
		mt_error *err)
{
	mt_ckpt_writer *w = NULL;
	int rc = mt_ckpt_writer_open(s, name, NULL, &w, err);
	/* The whole state at once, as save_checkpoint gives it. */
	mt_ckpt_tensor_in *in = calloc((size_t)n, sizeof *in);
	char(*keys)[32] = calloc((size_t)n, sizeof *keys);
	uint64_t shape[1] = {per / 4};
	for (int i = 0; in && keys && i < n; i++) {
		snprintf(keys[i], sizeof keys[i], "layer%d.weight", i);
		in[i] = (mt_ckpt_tensor_in){keys[i], MT_FLOAT32, 1, shape, data + (size_t)i * per, per};
	}
	if (!rc)
		rc = in && keys ? mt_ckpt_add_many(w, in, (size_t)n, err) : MT_ENOMEM;
	free(in);
	free(keys);
	if (!rc)
		rc = mt_ckpt_set_state(w, "{\"step\":1}", err);
	if (!rc)
		rc = mt_ckpt_commit(w, NULL, err);
	mt_ckpt_writer_close(w);
	return rc;
}

static int load(mt_store *s, const char *name, char *out, size_t per, mt_error *err)
{
	mt_ckpt *c = NULL;
	int rc = mt_ckpt_open(s, name, &c, err);
	for (size_t i = 0; !rc && i < mt_ckpt_ntensors(c); i++) {
		mt_ckpt_tensor_info t;
		mt_ckpt_tensor(c, i, &t, NULL);
		rc = mt_ckpt_read(c, t.key, out + i * per, per, err);
	}
	mt_ckpt_close(c);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: ckpt-bench STORE DATA.bin NTENSORS REPS\n");
		return 2;
	}
	int n = atoi(argv[3]), reps = atoi(argv[4]);
	FILE *f = fopen(argv[2], "rb");
	if (!f || n < 1 || reps < 1)
		return 2;
	fseek(f, 0, SEEK_END);
	size_t len = (size_t)ftell(f), per = len / (size_t)n / 4 * 4;
	fseek(f, 0, SEEK_SET);
	char *data = malloc(len), *back = malloc(len);
	if (!data || !back || fread(data, 1, len, f) != len)
		return 1;
	fclose(f);
	mt_store *s;
	mt_error err = {0};
	if (mt_store_open(argv[1], &s, &err))
		return fail(&err);
	for (int r = 0; r < reps; r++) {
		char name[32];
		snprintf(name, sizeof name, "bench%d", r);
		double t0 = bench_now();
		if (save(s, name, data, per, n, &err))
			return fail(&err);
		double t1 = bench_now();
		if (load(s, name, back, per, &err))
			return fail(&err);
		double t2 = bench_now();
		if (memcmp(data, back, per * (size_t)n)) {
			fprintf(stderr, "ckpt-bench: loaded bytes differ\n");
			return 1;
		}
		printf("save %.3f load %.3f\n", t1 - t0, t2 - t1);
		fflush(stdout);
	}
	/* A second checkpoint of bench0 in which only the first tensors changed
	 * (5% of the bytes, rounded down to whole tensors): what it adds to the store. */
	int changed = n / 20 ? n / 20 : 1;
	for (size_t i = 0; i < per * (size_t)changed; i += 4)
		data[i + 3] ^= (char)0x80; /* flip the sign of every float */
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/models/bench0/tensors", argv[1]);
	long long before = dir_bytes(dir);
	double t0 = bench_now();
	if (save(s, "bench0", data, per, n, &err))
		return fail(&err);
	printf("partial %.3f changed %zu written %lld of %zu stored %lld\n", bench_now() - t0,
	       per * (size_t)changed, dir_bytes(dir) - before, per * (size_t)n, before);
	mt_store_close(s);
	free(data);
	free(back);
	return 0;
}
