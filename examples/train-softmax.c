/* train-softmax.c — softmax regression trained through the matorage loader, no ML framework.
 *
 * usage: train-softmax --store URL --train DATASET[@VERSION] --test DATASET[@VERSION]
 *                      [--epochs N] [--batch B] [--seed S]
 *                      [--checkpoint NAME [--resume] [--stop-after BATCHES]]
 * Reads attributes "image" (28x28, uint8 0..255 or float32 0..1) and "label" (int64 0..9).
 * Prints a line per epoch and, last, "test_accuracy=<fraction>".
 *
 * With --checkpoint, the weights and where training stands (epoch, batches taken,
 * the loader's resume token, the epoch's running sums) are saved as a checkpoint of
 * model NAME after every epoch; --stop-after saves one after that many batches in
 * all and stops, as an interrupted job would.  --resume starts from the newest
 * checkpoint, mid-epoch when it was taken there, and ends exactly as an
 * uninterrupted run: the shuffle is a function of (seed, epoch) and the loader's
 * token, and nothing else draws random numbers.
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

/* Where training stands: what a checkpoint's state holds besides the weights. */
typedef struct progress {
	int epoch;          /* the epoch under way (or next, when batch is 0) */
	uint64_t batch;     /* batches of it taken */
	uint64_t step;      /* batches taken in all */
	uint64_t seed;
	double loss;        /* the epoch's running sums */
	uint64_t seen, right;
	char token[1024];   /* the loader's resume token mid-epoch, else "" */
} progress;

static int save_checkpoint(mt_store *s, const char *name, const model *m, const progress *pr)
{
	uint64_t wshape[2] = {CLASSES, PIXELS}, bshape[1] = {CLASSES};
	char state[1600], meta[256];
	snprintf(state, sizeof state,
		 "{\"epoch\":%d,\"batch\":%llu,\"step\":%llu,\"seed\":%llu,\"loss\":%.17g,"
		 "\"seen\":%llu,\"right\":%llu,\"loader\":\"%s\"}",
		 pr->epoch, (unsigned long long)pr->batch, (unsigned long long)pr->step,
		 (unsigned long long)pr->seed, pr->loss, (unsigned long long)pr->seen,
		 (unsigned long long)pr->right, pr->token);
	snprintf(meta, sizeof meta, "{\"step\":%llu,\"description\":\"softmax regression\"}",
		 (unsigned long long)pr->step);
	mt_ckpt_writer *w = NULL;
	mt_error err = {0};
	char *version = NULL;
	int rc = mt_ckpt_writer_open(s, name, NULL, &w, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "w", MT_FLOAT32, 2, wshape, m->w, sizeof m->w, &err);
	if (!rc)
		rc = mt_ckpt_add(w, "b", MT_FLOAT32, 1, bshape, m->b, sizeof m->b, &err);
	if (!rc)
		rc = mt_ckpt_set_state(w, state, &err);
	if (!rc)
		rc = mt_ckpt_set_meta(w, meta, &err);
	if (!rc)
		rc = mt_ckpt_commit(w, &version, &err);
	mt_ckpt_writer_close(w);
	if (rc)
		fprintf(stderr, "train-softmax: checkpoint: %s\n", err.message);
	else
		printf("checkpoint %s@%s at step %llu\n", name, version, (unsigned long long)pr->step);
	free(version);
	return rc;
}

/* The number after "key": in the state's JSON text (0 when absent). */
static double state_num(const char *json, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\":", key);
	const char *p = strstr(json, pat);
	return p ? strtod(p + strlen(pat), NULL) : 0;
}

static int load_checkpoint(mt_store *s, const char *name, model *m, progress *pr)
{
	mt_ckpt *c = NULL;
	mt_error err = {0};
	int rc = mt_ckpt_open(s, name, &c, &err);
	if (!rc)
		rc = mt_ckpt_read(c, "w", m->w, sizeof m->w, &err);
	if (!rc)
		rc = mt_ckpt_read(c, "b", m->b, sizeof m->b, &err);
	if (rc) {
		fprintf(stderr, "train-softmax: resume: %s\n", err.message);
		mt_ckpt_close(c);
		return rc;
	}
	const char *st = mt_ckpt_state(c);
	pr->epoch = (int)state_num(st, "epoch");
	pr->batch = (uint64_t)state_num(st, "batch");
	pr->step = (uint64_t)state_num(st, "step");
	pr->seed = (uint64_t)state_num(st, "seed");
	pr->loss = state_num(st, "loss");
	pr->seen = (uint64_t)state_num(st, "seen");
	pr->right = (uint64_t)state_num(st, "right");
	const char *t = strstr(st, "\"loader\":\"");
	pr->token[0] = 0;
	if (t)
		sscanf(t + 10, "%1023[^\"]", pr->token);
	printf("resumed from %s@%s at epoch %d, batch %llu\n", name, mt_ckpt_version(c),
	       pr->epoch + 1, (unsigned long long)pr->batch);
	mt_ckpt_close(c);
	return 0;
}

static mt_loader *open_loader(mt_store *s, char *ref, size_t batch, int shuffle, uint64_t seed,
			      const char *resume, mt_dtype *image_dtype)
{
	const char *attrs[] = {"image", "label"};
	mt_loader_opts o;
	mt_loader_opts_init(&o);
	o.attrs = attrs;
	o.nattrs = 2;
	o.batch_rows = batch;
	o.shuffle = shuffle;
	o.seed = seed;
	o.resume = resume && *resume ? resume : NULL;
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

/* One batch's gradient step. */
static void train_batch(model *m, const mt_batch *b, mt_dtype dt, float lr, float (*grad)[PIXELS],
			progress *pr)
{
	float x[PIXELS], p[CLASSES], gb[CLASSES];
	const int64_t *y = b->cols[1].data;
	memset(grad, 0, CLASSES * sizeof *grad);
	memset(gb, 0, sizeof gb);
	for (size_t i = 0; i < b->rows; i++) {
		pixels(&b->cols[0], dt, i, x);
		predict(m, x, p);
		int label = (int)y[i];
		pr->loss -= log(p[label] > 1e-12f ? p[label] : 1e-12f);
		pr->right += argmax(p) == label;
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
	pr->seen += b->rows;
	pr->batch++;
	pr->step++;
}

struct args {
	const char *store, *ckpt;
	char *train, *test;
	int epochs, resume;
	size_t batch;
	uint64_t seed, stop_after;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.epochs = 5, .batch = 64, .seed = 1};
	for (int i = 1; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--resume")) {
			a->resume = 1;
			continue;
		}
		if (!v)
			return 2;
		if (!strcmp(argv[i], "--store"))
			a->store = v;
		else if (!strcmp(argv[i], "--train"))
			a->train = argv[i + 1];
		else if (!strcmp(argv[i], "--test"))
			a->test = argv[i + 1];
		else if (!strcmp(argv[i], "--epochs"))
			a->epochs = atoi(v);
		else if (!strcmp(argv[i], "--batch"))
			a->batch = (size_t)atol(v);
		else if (!strcmp(argv[i], "--seed"))
			a->seed = strtoull(v, NULL, 10);
		else if (!strcmp(argv[i], "--checkpoint"))
			a->ckpt = v;
		else if (!strcmp(argv[i], "--stop-after"))
			a->stop_after = strtoull(v, NULL, 10);
		else
			return 2;
		i++;
	}
	if (!a->train || !a->test || a->epochs < 1 || a->batch < 1 ||
	    ((a->resume || a->stop_after) && !a->ckpt))
		return 2;
	return 0;
}

/* Train until the last epoch ends, or until --stop-after (then *stopped). */
static int train(mt_store *s, const struct args *a, mt_loader *tl, mt_dtype dt, model *m,
		 progress *pr, int *stopped)
{
	float(*grad)[PIXELS] = calloc(CLASSES, sizeof *grad);
	mt_error err = {0};
	int rc = !grad;
	const mt_batch *b;
	for (int e = pr->epoch; !rc && e < a->epochs; e++) {
		/* A learning rate that decays per epoch converges smoothly. */
		float lr = 0.5f / (1.0f + 0.5f * (float)e);
		/* A resumed epoch goes on where the token says; others start afresh. */
		if (!pr->batch) {
			pr->loss = 0;
			pr->seen = pr->right = 0;
			if (mt_loader_set_epoch(tl, (uint64_t)e, &err)) {
				rc = 1;
				break;
			}
		}
		pr->epoch = e;
		while (!(rc = mt_loader_next(tl, &b, &err)) && b) {
			train_batch(m, b, dt, lr, grad, pr);
			if (a->stop_after && pr->step == a->stop_after) {
				mt_loader_state(tl, pr->token, sizeof pr->token);
				*stopped = 1;
				free(grad);
				return save_checkpoint(s, a->ckpt, m, pr);
			}
		}
		if (rc)
			break;
		printf("epoch %d: loss %.4f, train accuracy %.4f", e + 1, pr->loss / (double)pr->seen,
		       (double)pr->right / (double)pr->seen);
		/* A protected version's damaged shards are rebuilt as they are read. */
		mt_read_stats st = MT_READ_STATS_INIT;
		mt_loader_stats(tl, &st);
		if (st.healed_chunks)
			printf("; %llu chunks healed from parity", (unsigned long long)st.healed_chunks);
		printf("\n");
		pr->epoch = e + 1;
		pr->batch = 0;
		pr->token[0] = 0;
		if (a->ckpt)
			rc = save_checkpoint(s, a->ckpt, m, pr);
	}
	if (rc && err.message[0])
		fprintf(stderr, "train-softmax: %s\n", err.message);
	free(grad);
	return rc;
}

static int evaluate(mt_loader *vl, mt_dtype dt, const model *m)
{
	size_t n = 0, right = 0;
	float x[PIXELS], p[CLASSES];
	const mt_batch *b;
	mt_error err = {0};
	int rc;
	while (!(rc = mt_loader_next(vl, &b, &err)) && b) {
		const int64_t *y = b->cols[1].data;
		for (size_t i = 0; i < b->rows; i++) {
			pixels(&b->cols[0], dt, i, x);
			predict(m, x, p);
			right += argmax(p) == (int)y[i];
			n++;
		}
	}
	if (rc)
		fprintf(stderr, "train-softmax: %s\n", err.message[0] ? err.message : "out of memory");
	else
		printf("test_accuracy=%.4f\n", n ? (double)right / (double)n : 0.0);
	return rc;
}

int main(int argc, char **argv)
{
	struct args a;
	if (parse_args(argc, argv, &a)) {
		fprintf(stderr, "usage: train-softmax --store URL --train DATASET[@VERSION] "
				"--test DATASET[@VERSION] [--epochs N] [--batch B] [--seed S] "
				"[--checkpoint NAME [--resume] [--stop-after BATCHES]]\n");
		return 2;
	}
	mt_store *s;
	mt_error err = {0};
	if (mt_store_open(a.store, &s, &err)) {
		fprintf(stderr, "train-softmax: %s\n", err.message);
		return 1;
	}
	model *m = calloc(1, sizeof *m);
	progress *pr = calloc(1, sizeof *pr);
	int rc = !m || !pr;
	if (!rc) {
		pr->seed = a.seed;
		/* Resuming takes the seed the run started with. */
		if (a.resume)
			rc = load_checkpoint(s, a.ckpt, m, pr);
	}
	mt_dtype train_dt = MT_UINT8, test_dt = MT_UINT8;
	mt_loader *tl = rc ? NULL : open_loader(s, a.train, a.batch, 1, pr->seed, pr->token, &train_dt);
	mt_loader *vl = tl ? open_loader(s, a.test, 1000, 0, 0, NULL, &test_dt) : NULL;
	/* open_loader has said why it failed. */
	rc = rc || !tl || !vl;
	int stopped = 0;
	if (!rc)
		rc = train(s, &a, tl, train_dt, m, pr, &stopped);
	if (!rc && stopped)
		printf("stopped after %llu batches\n", (unsigned long long)pr->step);
	else if (!rc)
		rc = evaluate(vl, test_dt, m);
	free(m);
	free(pr);
	mt_loader_close(tl);
	mt_loader_close(vl);
	mt_store_close(s);
	return rc ? 1 : 0;
}
