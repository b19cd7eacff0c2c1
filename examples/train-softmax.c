/* train-softmax.c — softmax regression trained through the matorage loader, no ML framework.
 *
 * usage: train-softmax --store URL --train DATASET[@VERSION] --test DATASET[@VERSION]
 *                      [--epochs N] [--batch B] [--seed S]
 * Reads attributes "image" (28x28, uint8 0..255 or float32 0..1) and "label" (int64 0..9).
 * Prints a line per epoch and, last, "test_accuracy=<fraction>".
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <matorage.h>

#define PIXELS 784
#define CLASSES 10

typedef struct model {
	float w[CLASSES][PIXELS];
	float b[CLASSES];
} model;

/* One image as floats in [0, 1], whatever the stored dtype. */
static void pixels(const mt_batch_col *col, mt_dtype dt, size_t i, float *x)
{
	if (dt == MT_UINT8) {
		const uint8_t *p = (const uint8_t *)col->data + i * PIXELS;
		for (int k = 0; k < PIXELS; k++)
			x[k] = p[k] / 255.0f;
	} else {
		memcpy(x, (const float *)col->data + i * PIXELS, PIXELS * sizeof *x);
	}
}

/* Class probabilities of x. */
static void predict(const model *m, const float *x, float *p)
{
	float max = -INFINITY;
	for (int c = 0; c < CLASSES; c++) {
		float z = m->b[c];
		for (int k = 0; k < PIXELS; k++)
			z += m->w[c][k] * x[k];
		p[c] = z;
		max = z > max ? z : max;
	}
	float sum = 0;
	for (int c = 0; c < CLASSES; c++)
		sum += (p[c] = expf(p[c] - max));
	for (int c = 0; c < CLASSES; c++)
		p[c] /= sum;
}

static int argmax(const float *p)
{
	int best = 0;
	for (int c = 1; c < CLASSES; c++)
		if (p[c] > p[best])
			best = c;
	return best;
}

/* "name@version" into the loader's arguments (version NULL: latest). */
static void split_ref(char *ref, const char **ds, const char **ver)
{
	char *at = strchr(ref, '@');
	*ds = ref;
	*ver = NULL;
	if (at) {
		*at = '\0';
		*ver = at + 1;
	}
}

static mt_loader *open_loader(mt_store *s, char *ref, size_t batch, int shuffle, uint64_t seed,
			      mt_dtype *image_dtype)
{
	const char *attrs[] = {"image", "label"};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.attrs = attrs;
	o.nattrs = 2;
	o.batch_rows = batch;
	o.shuffle = shuffle;
	o.seed = seed;
	const char *ds, *ver;
	split_ref(ref, &ds, &ver);
	mt_loader *l;
	mt_error err = {0};
	if (mt_loader_open(s, ds, ver, &o, &l, &err)) {
		fprintf(stderr, "train-softmax: %s\n", err.message);
		return NULL;
	}
	/* The image's dtype, from the dataset's description of it. */
	mt_reader *r;
	if (mt_reader_open(s, ds, ver, &r, &err) == 0) {
		int a = mt_reader_attr_index(r, "image");
		*image_dtype = a >= 0 ? mt_reader_attr(r, (size_t)a)->dtype : MT_UINT8;
		mt_reader_close(r);
	}
	return l;
}

int main(int argc, char **argv)
{
	const char *store = NULL;
	char *train = NULL, *test = NULL;
	int epochs = 5;
	size_t batch = 64;
	uint64_t seed = 1;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--store"))
			store = argv[i + 1];
		else if (!strcmp(argv[i], "--train"))
			train = argv[i + 1];
		else if (!strcmp(argv[i], "--test"))
			test = argv[i + 1];
		else if (!strcmp(argv[i], "--epochs"))
			epochs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--batch"))
			batch = (size_t)atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 10);
		else
			break;
	}
	if (!train || !test || epochs < 1 || batch < 1) {
		fprintf(stderr, "usage: train-softmax --store URL --train DATASET[@VERSION] "
				"--test DATASET[@VERSION] [--epochs N] [--batch B] [--seed S]\n");
		return 2;
	}
	mt_store *s;
	mt_error err = {0};
	if (mt_store_open(store, &s, &err)) {
		fprintf(stderr, "train-softmax: %s\n", err.message);
		return 1;
	}
	mt_dtype train_dt = MT_UINT8, test_dt = MT_UINT8;
	mt_loader *tl = open_loader(s, train, batch, 1, seed, &train_dt);
	mt_loader *vl = tl ? open_loader(s, test, 1000, 0, 0, &test_dt) : NULL;
	model *m = calloc(1, sizeof *m);
	float(*grad)[PIXELS] = calloc(CLASSES, sizeof *grad);
	/* open_loader has said why it failed. */
	int reported = !tl || !vl;
	int rc = reported || !m || !grad;
	float x[PIXELS], p[CLASSES], gb[CLASSES];
	const mt_batch *b;
	for (int e = 0; !rc && e < epochs; e++) {
		/* A learning rate that decays per epoch converges smoothly. */
		float lr = 0.5f / (1.0f + 0.5f * (float)e);
		double loss = 0;
		size_t seen = 0, right = 0;
		if (mt_loader_set_epoch(tl, (uint64_t)e, &err)) {
			rc = 1;
			break;
		}
		while (!(rc = mt_loader_next(tl, &b, &err)) && b) {
			const int64_t *y = b->cols[1].data;
			memset(grad, 0, CLASSES * sizeof *grad);
			memset(gb, 0, sizeof gb);
			for (size_t i = 0; i < b->rows; i++) {
				pixels(&b->cols[0], train_dt, i, x);
				predict(m, x, p);
				int label = (int)y[i];
				loss -= log(p[label] > 1e-12f ? p[label] : 1e-12f);
				right += argmax(p) == label;
				for (int c = 0; c < CLASSES; c++) {
					float d = p[c] - (c == label);
					gb[c] += d;
					for (int k = 0; k < PIXELS; k++)
						grad[c][k] += d * x[k];
				}
			}
			float step = lr / (float)b->rows;
			for (int c = 0; c < CLASSES; c++) {
				m->b[c] -= step * gb[c];
				for (int k = 0; k < PIXELS; k++)
					m->w[c][k] -= step * grad[c][k];
			}
			seen += b->rows;
		}
		if (rc)
			break;
		printf("epoch %d: loss %.4f, train accuracy %.4f", e + 1, loss / (double)seen,
		       (double)right / (double)seen);
		/* A protected version's damaged shards are rebuilt as they are read. */
		mt_read_stats st = MT_READ_STATS_INIT;
		mt_loader_stats(tl, &st);
		if (st.healed_chunks)
			printf("; %llu chunks healed from parity", (unsigned long long)st.healed_chunks);
		printf("\n");
	}
	size_t n = 0, right = 0;
	while (!rc && !(rc = mt_loader_next(vl, &b, &err)) && b) {
		const int64_t *y = b->cols[1].data;
		for (size_t i = 0; i < b->rows; i++) {
			pixels(&b->cols[0], test_dt, i, x);
			predict(m, x, p);
			right += argmax(p) == (int)y[i];
			n++;
		}
	}
	if (rc && !reported)
		fprintf(stderr, "train-softmax: %s\n", err.message[0] ? err.message : "out of memory");
	else
		printf("test_accuracy=%.4f\n", n ? (double)right / (double)n : 0.0);
	free(m);
	free(grad);
	mt_loader_close(tl);
	mt_loader_close(vl);
	mt_store_close(s);
	return rc ? 1 : 0;
}
