/* loader-mix.c — several loaders mixed into one stream of batches by weight, reproducibly from a seed. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader-plan.h"
#include "loader.h"

struct mt_mix {
	mt_loader **loaders;
	double *weights;
	uint64_t *left; /* batches each loader still has this epoch */
	size_t n;
	uint64_t seed, epoch;
	uint64_t draws; /* batches drawn this epoch */
};

static void mix_reset(mt_mix *m)
{
	for (size_t i = 0; i < m->n; i++)
		m->left[i] = mti_loader_batches_left(m->loaders[i]);
	m->draws = 0;
}

int mt_mix_open(mt_loader *const *loaders, const double *weights, size_t n, uint64_t seed,
		mt_mix **out, mt_error *err)
{
	*out = NULL;
	if (!n)
		return mti_err(err, MT_EINVAL, "mix: no loaders");
	for (size_t i = 0; i < n; i++)
		if (!(weights[i] > 0))
			return mti_err(err, MT_EINVAL, "mix: weight %zu is not positive", i);
	mt_mix *m = calloc(1, sizeof *m);
	if (m) {
		m->loaders = malloc(n * sizeof *m->loaders);
		m->weights = malloc(n * sizeof *m->weights);
		m->left = malloc(n * sizeof *m->left);
	}
	if (!m || !m->loaders || !m->weights || !m->left) {
		mt_mix_close(m);
		return mti_err(err, MT_ENOMEM, "out of memory");
	}
	memcpy(m->loaders, loaders, n * sizeof *m->loaders);
	memcpy(m->weights, weights, n * sizeof *m->weights);
	m->n = n;
	m->seed = seed;
	m->epoch = mti_loader_epoch(loaders[0]);
	mix_reset(m);
	*out = m;
	return 0;
}

int mt_mix_next(mt_mix *m, const mt_batch **out, size_t *source, mt_error *err)
{
	*out = NULL;
	double total = 0;
	for (size_t i = 0; i < m->n; i++)
		total += m->left[i] ? m->weights[i] : 0;
	if (total <= 0)
		return 0;
	/* 53 random bits as a fraction of the weights still in play. */
	uint64_t st = mti_plan_stream(m->seed, m->epoch, m->draws + 1);
	double x = (double)(mti_plan_splitmix(&st) >> 11) / 9007199254740992.0 * total;
	size_t pick = m->n;
	for (size_t i = 0; i < m->n; i++) {
		if (!m->left[i])
			continue;
		pick = i;
		if (x < m->weights[i])
			break;
		x -= m->weights[i];
	}
	int rc = mt_loader_next(m->loaders[pick], out, err);
	if (rc)
		return rc;
	m->draws++;
	m->left[pick]--;
	if (!*out) /* the loader ran out early: draw again without it */
		return mt_mix_next(m, out, source, err);
	if (source)
		*source = pick;
	return 0;
}

int mt_mix_set_epoch(mt_mix *m, uint64_t epoch, mt_error *err)
{
	for (size_t i = 0; i < m->n; i++) {
		int rc = mt_loader_set_epoch(m->loaders[i], epoch, err);
		if (rc)
			return rc;
	}
	m->epoch = epoch;
	mix_reset(m);
	return 0;
}

size_t mt_mix_state(const mt_mix *m, char *buf, size_t cap)
{
	char line[128];
	int n = snprintf(line, sizeof line, "mtm1 %" PRIu64 " %" PRIu64 " %" PRIu64 " %zu", m->seed,
			 m->epoch, m->draws, m->n);
	if (buf && cap)
		snprintf(buf, cap, "%s", line);
	return n > 0 ? (size_t)n : 0;
}

int mt_mix_resume(mt_mix *m, const char *token, mt_error *err)
{
	uint64_t seed, epoch, draws;
	size_t n;
	int used = 0;
	if (sscanf(token, "mtm1 %" SCNu64 " %" SCNu64 " %" SCNu64 " %zu%n", &seed, &epoch, &draws, &n,
		   &used) != 4 || token[used + strspn(token + used, " \n")])
		return mti_err(err, MT_EINVAL, "mix: not a mix token: '%.60s'", token);
	if (seed != m->seed || n != m->n)
		return mti_err(err, MT_EINVAL, "mix: the token is for %zu loaders with seed %" PRIu64
			      ", this mix has %zu with seed %" PRIu64, n, seed, m->n, m->seed);
	/* The loaders, resumed from their own tokens, know what is left. */
	m->epoch = epoch;
	mix_reset(m);
	m->draws = draws;
	return 0;
}

void mt_mix_close(mt_mix *m)
{
	if (!m)
		return;
	free(m->loaders);
	free(m->weights);
	free(m->left);
	free(m);
}
