/* latest.c — the latest version of a far store's dataset guessed from the metadata cache, while the listing that confirms or refutes the guess is in flight.
 *
 * Opening "latest" on S3 must list the versions (and read the head) before
 * it knows which manifest to read: a round trip before any data can be
 * asked for.  The metadata cache keeps the manifest the last open found to
 * be the latest; a caller that can undo what it does (a loader: its
 * windows are not delivered before the open returns) starts on that guess
 * and waits here for the listing.  The guess is only a guess: it is the
 * latest when the listing's latest manifest has exactly its bytes;
 * otherwise the listing's manifest is given back and the caller starts
 * again on it.  Nothing read of a refuted guess may reach the caller's
 * caller. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "dataset.h"

struct mti_latest {
	mt_store *s;
	mti_meta_cache *cache; /* where the confirmed latest is kept */
	char *dataset;
	char *guess;      /* the guessed manifest's text */
	pthread_t thread; /* the listing, through mti_dataset_open */
	mt_manifest *m;   /* what it found */
	char *json;
	mt_error err;
	int rc;
};

/* The cache entry naming dataset's latest in s: "latest-<sha256 of url and
 * name>" (a name of another store colliding would only be refuted). */
static int latest_name(mt_store *s, const char *dataset, char name[8 + MT_SHA256_HEX])
{
	char *key = mti_asprintf("%s\n%s", mt_store_url(s), dataset);
	char sha[MT_SHA256_HEX];
	mt_error e = {0};
	int rc = key ? mti_sha256_hex(key, strlen(key), sha, &e) : MT_ENOMEM;
	free(key);
	if (!rc)
		snprintf(name, 8 + MT_SHA256_HEX, "latest-%s", sha);
	return rc;
}

void mti_latest_keep(mt_store *s, mti_meta_cache *c, const char *dataset, const char *json)
{
	char name[8 + MT_SHA256_HEX];
	if (!c || !json || latest_name(s, dataset, name))
		return;
	size_t len = strlen(json), had = 0;
	char *old = mti_meta_cache_get(c, name, &had);
	if (!old || had != len || memcmp(old, json, len))
		mti_meta_cache_put(c, name, json, len);
	free(old);
}

static void *latest_list(void *arg)
{
	mti_latest *l = arg;
	l->rc = mti_dataset_open(l->s, l->dataset, "latest", MTI_OPEN_LAZY, &l->m, &l->json, &l->err);
	return NULL;
}

/* The kept manifest, decoded: 0, or 1 when there is none that decodes as
 * one of dataset's (a damaged entry is a miss, overwritten at the next
 * keep). */
static int latest_decode(mt_store *s, mti_meta_cache *c, const char *dataset, mt_manifest **m,
			 char **json)
{
	char name[8 + MT_SHA256_HEX];
	size_t len = 0;
	char *data = c && !latest_name(s, dataset, name) ? mti_meta_cache_get(c, name, &len) : NULL;
	*json = data ? strndup(data, len) : NULL;
	mt_error e = {0};
	int bad = !*json || strlen(*json) != len || mti_manifest_decode(data, len, name, m, &e);
	free(data);
	if (!bad && strcmp((*m)->dataset, dataset)) {
		mti_manifest_free(*m);
		bad = 1;
	}
	if (bad) {
		free(*json);
		*json = NULL;
		*m = NULL;
	}
	return bad;
}

int mti_latest_guess(mt_store *s, mti_meta_cache *c, const char *dataset, mt_manifest **m,
		     char **json, mti_latest **out)
{
	*out = NULL;
	if (!s->ops->far || mt_name_check(dataset, "dataset", NULL) ||
	    latest_decode(s, c, dataset, m, json))
		return 1;
	mti_latest *l = calloc(1, sizeof *l);
	if (l) {
		*l = (mti_latest){.s = s, .cache = c, .dataset = mti_strdup(dataset),
				  .guess = mti_strdup(*json)};
	}
	if (!l || !l->dataset || !l->guess || pthread_create(&l->thread, NULL, latest_list, l)) {
		if (l) {
			free(l->dataset);
			free(l->guess);
		}
		free(l);
		mti_manifest_free(*m);
		free(*json);
		*m = NULL;
		*json = NULL;
		return 1;
	}
	*out = l;
	return 0;
}

int mti_latest_wait(mti_latest *l, mt_manifest **m, char **json, mt_error *err)
{
	pthread_join(l->thread, NULL);
	int rc = l->rc ? mti_err_copy(err, &l->err) : strcmp(l->json, l->guess) != 0;
	if (rc == 1) {
		mti_latest_keep(l->s, l->cache, l->dataset, l->json);
		*m = l->m;
		*json = l->json;
		l->m = NULL;
		l->json = NULL;
	}
	mti_manifest_free(l->m);
	free(l->json);
	free(l->dataset);
	free(l->guess);
	free(l);
	return rc;
}
