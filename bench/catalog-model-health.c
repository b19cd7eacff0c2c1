/* catalog-model-health.c — what the health column costs the model lists: a model of C
 * checkpoints of T tensors each (every checkpoint changes T/20 of its parent's), synced
 * into a fresh catalog, every tensor object recorded sound, then the checkpoint list and
 * the model list read R times; prints each time and the medians.
 * usage: catalog-model-health [C [T [R [DIR]]]]   (DIR: where the store and catalog go) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "matorage-catalog.h"
#include "bench.h"

static void die(const mt_error *err)
{
	fprintf(stderr, "catalog-model-health: %s\n", err->message);
	exit(1);
}

/* Checkpoints v1..vC: tensor i holds the value cur[i]; each checkpoint gives T/20 of them
 * new values, so the others' objects are its parent's. */
static void make_model(mt_store *s, size_t nck, size_t nt)
{
	uint64_t *cur = calloc(nt, sizeof *cur), next = nt, shape[1] = {1};
	mt_error err = {0};
	for (size_t i = 0; i < nt; i++)
		cur[i] = i;
	for (size_t c = 0; c < nck; c++) {
		for (size_t j = 0; c && j < (nt + 19) / 20; j++)
			cur[(c * 7 + j * 13) % nt] = next++;
		mt_ckpt_writer *w;
		if (mt_ckpt_writer_open(s, "big", NULL, &w, &err))
			die(&err);
		for (size_t i = 0; i < nt; i++) {
			char key[32];
			snprintf(key, sizeof key, "t%zu", i);
			if (mt_ckpt_add(w, key, MT_UINT64, 1, shape, &cur[i], sizeof cur[i], &err))
				die(&err);
		}
		if (mt_ckpt_commit(w, NULL, &err))
			die(&err);
		mt_ckpt_writer_close(w);
	}
	free(cur);
}

struct objs {
	mt_catalog_object_check *k;
	char (*name)[80];
	size_t n, cap;
};

static int count_row(void *ud, const mt_catalog_row *row)
{
	++*(size_t *)ud;
	return 0;
}

static int add_tensor(void *ud, const mt_catalog_row *row)
{
	struct objs *o = ud;
	if (o->n == o->cap)
		return 1;
	snprintf(o->name[o->n], sizeof o->name[0], "tensors/%s", row->cols[5]);
	o->k[o->n] = (mt_catalog_object_check){o->name[o->n], NULL, MT_HEALTH_SOUND, NULL};
	o->n++;
	return 0;
}

static int ck_id(void *ud, const mt_catalog_row *row)
{
	int64_t **ids = ud;
	*(*ids)++ = row->id;
	return 0;
}

int main(int argc, char **argv)
{
	size_t nck = argc > 1 ? strtoull(argv[1], NULL, 10) : 500;
	size_t nt = argc > 2 ? strtoull(argv[2], NULL, 10) : 200;
	int runs = argc > 3 ? atoi(argv[3]) : 5;
	const char *dir = argc > 4 ? argv[4] : "/tmp/mt-bench-model-health";
	if (!nck || !nt || runs < 1 || runs > 99) {
		fprintf(stderr, "usage: catalog-model-health [C [T [R [DIR]]]]\n");
		return 2;
	}
	char url[512], cat[512], marker[512];
	snprintf(url, sizeof url, "file://%s/store", dir);
	snprintf(cat, sizeof cat, "%s/catalog.db", dir);
	snprintf(marker, sizeof marker, "%s/made-%zu-%zu", dir, nck, nt);
	mkdir(dir, 0755);
	mt_store *s;
	mt_error err = {0};
	if (mt_store_open(url, &s, &err))
		die(&err);
	struct stat st;
	if (stat(marker, &st) != 0) {
		double t0 = bench_now();
		make_model(s, nck, nt);
		printf("made %zu checkpoints of %zu tensors in %.1f s\n", nck, nt, bench_now() - t0);
		FILE *f = fopen(marker, "w");
		if (f)
			fclose(f);
	}
	remove(cat);
	mt_catalog *c;
	if (mt_catalog_open(cat, &c, &err) ||
	    mt_catalog_sync(c, "local", s, NULL, MT_CATALOG_MODELS, NULL, NULL, NULL, &err))
		die(&err);
	size_t n = 0;
	int64_t bucket = 0, model = 0, *ids = calloc(nck, sizeof *ids), *p = ids;
	mt_catalog_list(c, MT_CAT_REMOTES, 0, NULL, ck_id, &(int64_t *){&bucket}, &err);
	mt_catalog_list(c, MT_CAT_BUCKETS, bucket, NULL, ck_id, &(int64_t *){&bucket}, &err);
	mt_catalog_list(c, MT_CAT_MODELS, bucket, NULL, ck_id, &(int64_t *){&model}, &err);
	mt_catalog_list(c, MT_CAT_CHECKPOINTS, model, NULL, ck_id, &p, &err);
	struct objs o = {calloc(nck * nt, sizeof *o.k), calloc(nck * nt, sizeof *o.name), 0,
			 nck * nt};
	for (size_t i = 0; i < nck; i++)
		mt_catalog_list(c, MT_CAT_TENSORS, ids[i], NULL, add_tensor, &o, &err);
	if (mt_catalog_model_checked(c, mt_store_url(s), "big", o.k, o.n, &err))
		die(&err);
	printf("%zu tensor references recorded sound\n", o.n);
	double tk[99], tm[99];
	for (int r = 0; r < runs; r++) {
		double a = bench_now();
		n = 0;
		if (mt_catalog_list(c, MT_CAT_CHECKPOINTS, model, NULL, count_row, &n, &err))
			die(&err);
		double b = bench_now();
		size_t nm = 0;
		if (mt_catalog_list(c, MT_CAT_MODELS, bucket, NULL, count_row, &nm, &err))
			die(&err);
		tk[r] = b - a;
		tm[r] = bench_now() - b;
		printf("checkpoints list (%zu rows): %.3f s; models list (%zu rows): %.3f s\n", n,
		       tk[r], nm, tm[r]);
	}
	printf("median of %d: checkpoints %.3f s, models %.3f s\n", runs,
	       bench_median(tk, (size_t)runs), bench_median(tm, (size_t)runs));
	free(o.k);
	free(o.name);
	free(ids);
	mt_catalog_close(c);
	mt_store_close(s);
	return 0;
}
