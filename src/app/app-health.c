/* app-health.c — what a verify, repair or protect found of each version and shard, gathered from the library's reports and written to the catalog. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"

void app_health_init(struct app_health *h, const char *kind, int dry_run)
{
	memset(h, 0, sizeof *h);
	pthread_mutex_init(&h->lock, NULL);
	h->kind = kind;
	h->dry_run = dry_run;
}

void app_health_free(struct app_health *h)
{
	for (size_t i = 0; i < h->nv; i++)
		free(h->v[i].version);
	for (size_t i = 0; i < h->ns; i++)
		free(h->s[i].note);
	for (size_t i = 0; i < h->nf; i++)
		free(h->f[i].note);
	free(h->v);
	free(h->s);
	free(h->f);
	pthread_mutex_destroy(&h->lock);
}

struct app_health_version *app_health_version(struct app_health *h, const char *version)
{
	for (size_t i = 0; i < h->nv; i++)
		if (!strcmp(h->v[i].version, version))
			return &h->v[i];
	h->v = app_xreallocarray(h->v, h->nv + 1, sizeof *h->v);
	struct app_health_version *v = &h->v[h->nv++];
	memset(v, 0, sizeof *v);
	v->version = app_xstrdup(version);
	return v;
}

/* Add item to a ", "-separated list once, while it fits. */
static void health_append(char *buf, size_t cap, const char *item)
{
	size_t len = strlen(buf);
	if (strstr(buf, item) || len + strlen(item) + 3 >= cap)
		return;
	snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", item);
}

/* The sha256 in a shard's key (datasets/<d>/shards/<sha256>.h5); NULL when
 * the key is no shard's. */
static const char *health_object_sha(const char *key, const char *ext, char *buf, size_t cap)
{
	const char *slash = key ? strrchr(key, '/') : NULL;
	const char *dot = slash ? strstr(slash, ext) : NULL;
	if (!dot || (size_t)(dot - slash - 1) >= cap)
		return NULL;
	snprintf(buf, cap, "%.*s", (int)(dot - slash - 1), slash + 1);
	return buf;
}

/* A new, zeroed entry; the array doubles, as a verify of a million shards
 * adds one each. */
static struct app_health_shard *health_new_shard(struct app_health *h)
{
	if (h->ns == h->cap_s) {
		h->cap_s = h->cap_s ? 2 * h->cap_s : 64;
		h->s = app_xreallocarray(h->s, h->cap_s, sizeof *h->s);
	}
	struct app_health_shard *s = &h->s[h->ns++];
	memset(s, 0, sizeof *s);
	return s;
}

static void health_shard(struct app_health *h, const mt_repair_report *r, int state)
{
	char sha[72];
	if (r->kind != MT_REPAIR_SHARD || !health_object_sha(r->key, ".h5", sha, sizeof sha))
		return;
	struct app_health_shard *s = health_new_shard(h);
	snprintf(s->sha256, sizeof s->sha256, "%s", sha);
	s->state = state;
	s->note = state == MT_HEALTH_UNREPAIRABLE ? app_xstrdup(r->problem ? r->problem : "damaged")
		  : r->source			  ? app_xstrdup(r->source)
						  : NULL;
}

/* A fragment's health, sound ones too: a fragment holds no rows itself,
 * so a check of it as a whole is its only check.  Its note says what was
 * wrong ("missing") and what rebuilt it or would. */
static void health_fragment(struct app_health *h, const mt_repair_report *r)
{
	static const int states[] = { [MT_REPAIR_SOUND] = MT_HEALTH_SOUND,
				      [MT_REPAIR_REBUILT] = MT_HEALTH_REBUILT,
				      [MT_REPAIR_REPAIRABLE] = MT_HEALTH_REPAIRABLE,
				      [MT_REPAIR_UNREPAIRABLE] = MT_HEALTH_UNREPAIRABLE };
	char sha[72], note[400];
	if (r->kind != MT_REPAIR_FRAGMENT || r->state < 0 || r->state > MT_REPAIR_UNREPAIRABLE ||
	    !health_object_sha(r->key, ".json", sha, sizeof sha))
		return;
	h->f = app_xreallocarray(h->f, h->nf + 1, sizeof *h->f);
	struct app_health_fragment *f = &h->f[h->nf++];
	snprintf(f->sha256, sizeof f->sha256, "%s", sha);
	f->state = states[r->state];
	snprintf(note, sizeof note, "%s%s%s", r->problem ? r->problem : "",
		 r->problem && r->source ? ", " : "", r->source ? r->source : "");
	if (r->source && r->state != MT_REPAIR_SOUND)
		snprintf(note, sizeof note, "%s%s%s %s", r->problem ? r->problem : "",
			 r->problem ? ", " : "",
			 r->state == MT_REPAIR_REBUILT ? "rebuilt from" : "repairable from", r->source);
	f->note = note[0] ? app_xstrdup(note) : NULL;
}

/* What is lost, as a line names it: "shard 3 (rows 30..39)", "manifest". */
static void health_lost(struct app_health_version *v, const mt_repair_report *r)
{
	static const char *const kinds[] = { "shard", "parity object", "manifest",
					     "protection record", "tensor", "fragment" };
	char item[96];
	if (r->kind == MT_REPAIR_SHARD || r->kind == MT_REPAIR_FRAGMENT)
		snprintf(item, sizeof item, "%s %zu (rows %llu..%llu)",
			 r->kind == MT_REPAIR_SHARD ? "shard" : "fragment", r->number,
			 (unsigned long long)r->first_row,
			 (unsigned long long)(r->first_row + r->rows - (r->rows > 0)));
	else
		snprintf(item, sizeof item, "%s", kinds[r->kind <= MT_REPAIR_FRAGMENT ? r->kind : 0]);
	health_append(v->lost, sizeof v->lost, item);
}

void app_health_report(struct app_health *h, const mt_repair_report *r)
{
	pthread_mutex_lock(&h->lock);
	struct app_health_version *v = app_health_version(h, r->version);
	v->objects++;
	v->bytes_read += r->bytes_read;
	health_fragment(h, r);
	if (r->kind == MT_REPAIR_SHARD && r->state == MT_REPAIR_SOUND)
		v->shards_sound++;
	else if (r->kind == MT_REPAIR_SHARD)
		v->shards_bad++;
	if (r->state != MT_REPAIR_SOUND)
		v->damaged++;
	if (r->state == MT_REPAIR_REBUILT || r->state == MT_REPAIR_REPAIRABLE) {
		if (r->source)
			health_append(v->sources, sizeof v->sources, r->source);
		if (r->state == MT_REPAIR_REBUILT)
			v->rebuilt++;
		health_shard(h, r, r->state == MT_REPAIR_REBUILT ? MT_HEALTH_REBUILT
								 : MT_HEALTH_REPAIRABLE);
	} else if (r->state == MT_REPAIR_UNREPAIRABLE) {
		v->unrepairable++;
		health_lost(v, r);
		health_shard(h, r, MT_HEALTH_UNREPAIRABLE);
	}
	pthread_mutex_unlock(&h->lock);
}

void app_health_verified(struct app_health *h, const char *sha256, int code, const char *message)
{
	pthread_mutex_lock(&h->lock);
	struct app_health_shard *s = health_new_shard(h);
	snprintf(s->sha256, sizeof s->sha256, "%s", sha256);
	s->verified = 1;
	s->code = code;
	s->note = code && message ? app_xstrdup(message) : NULL;
	pthread_mutex_unlock(&h->lock);
}

void app_health_report_fn(void *ud, const mt_repair_report *r)
{
	app_health_report(ud, r);
}

int app_health_state(const struct app_health *h, const struct app_health_version *v)
{
	if (v->state_set)
		return v->state;
	if (v->unrepairable)
		return MT_HEALTH_UNREPAIRABLE;
	/* A dry run rebuilds nothing: what it found damaged is still so. */
	if (v->damaged > v->rebuilt)
		return h->dry_run ? MT_HEALTH_REPAIRABLE : MT_HEALTH_DAMAGED;
	return MT_HEALTH_SOUND;
}

static int health_sha_cmp(const void *a, const void *b)
{
	const struct app_health_shard *x = *(const struct app_health_shard *const *)a;
	const struct app_health_shard *y = *(const struct app_health_shard *const *)b;
	int d = strcmp(x->sha256, y->sha256);
	return d ? d : (x > y) - (x < y);
}

static int health_same(const struct app_health_shard *a, const struct app_health_shard *b)
{
	return !strcmp(a->sha256, b->sha256) && a->verified == b->verified && a->code == b->code &&
	       a->state == b->state && !strcmp(a->note ? a->note : "", b->note ? b->note : "");
}

/* Every shard's result in one call.  A shard's results stay in the order
 * found (a verification, then what a dry run said of it); shards are
 * independent rows, so they go grouped by sha256, and a result that only
 * repeats the one before it for the same object (a shard a version lists
 * many times) is written once. */
static void health_record_shards(const struct app_health *h, mt_catalog *c, const char *url,
				 const char *dataset, mt_error *err)
{
	if (!h->ns)
		return;
	const struct app_health_shard **by = app_xreallocarray(NULL, h->ns, sizeof *by);
	mt_catalog_shard_check *k = app_xreallocarray(NULL, h->ns, sizeof *k);
	for (size_t i = 0; i < h->ns; i++)
		by[i] = &h->s[i];
	qsort(by, h->ns, sizeof *by, health_sha_cmp);
	size_t n = 0;
	for (size_t i = 0; i < h->ns; i++) {
		if (i && health_same(by[i - 1], by[i]))
			continue;
		k[n++] = (mt_catalog_shard_check){ by[i]->sha256, by[i]->verified, by[i]->code,
						   by[i]->state, by[i]->note };
	}
	mt_catalog_shards_checked(c, url, dataset, k, n, err);
	free(k);
	free(by);
}

static void health_record_fragments(const struct app_health *h, mt_catalog *c, const char *url,
				    const char *dataset, mt_error *err)
{
	if (!h->nf)
		return;
	mt_catalog_fragment_check *k = app_xreallocarray(NULL, h->nf, sizeof *k);
	for (size_t i = 0; i < h->nf; i++)
		k[i] = (mt_catalog_fragment_check){ h->f[i].sha256, h->f[i].state, h->f[i].note };
	mt_catalog_fragments_checked(c, url, dataset, k, h->nf, err);
	free(k);
}

void app_health_record(struct app_health *h, mt_catalog *c, const char *url, const char *dataset)
{
	mt_error err = { 0 };
	health_record_shards(h, c, url, dataset, &err);
	health_record_fragments(h, c, url, dataset, &err);
	for (size_t i = 0; i < h->nv; i++) {
		struct app_health_version *v = &h->v[i];
		mt_catalog_check k;
		mt_catalog_check_init(&k);
		k.kind = h->kind;
		k.state = app_health_state(h, v);
		k.sources = v->sources[0] ? v->sources : NULL;
		k.message = v->message[0] ? v->message : v->lost[0] ? v->lost : NULL;
		k.objects = v->objects;
		k.damaged = v->damaged;
		k.rebuilt = v->rebuilt;
		k.unrepairable = v->unrepairable;
		k.bytes_read = v->bytes_read;
		mt_catalog_version_checked(c, url, dataset, v->version, &k, &err);
	}
}

/* mt_repair's reports, to the health and then to the caller's function. */
struct repair_tee {
	struct app_health *h;
	mt_repair_fn fn;
	mt_salvage_fn salvaged;
	void *ud;
};

static void salvage_tee(void *ud, const mt_salvage_report *s)
{
	struct repair_tee *t = ud;
	if (t->salvaged)
		t->salvaged(t->ud, s);
}

static void repair_tee(void *ud, const mt_repair_report *r)
{
	struct repair_tee *t = ud;
	app_health_report(t->h, r);
	if (t->fn)
		t->fn(t->ud, r);
}

int app_repair(mt_store *s, const char *dataset, const char *version, mt_repair_opts *o,
	       struct app_health *h, mt_repair_stats *st, mt_error *err)
{
	struct repair_tee t = { h, o->report, o->salvaged, o->report_ud };
	mt_repair_opts run = *o;
	run.report = repair_tee;
	run.salvaged = salvage_tee;
	run.report_ud = &t;
	return mt_repair(s, dataset, version && *version ? version : NULL, &run, st, err);
}

const char *app_repair_summary(const mt_repair_stats *st, int dry_run, char *buf, size_t cap)
{
	char read[32];
	app_human_bytes(st->bytes_read, read, sizeof read);
	snprintf(buf, cap,
		 "%llu objects checked, %llu damaged, %llu %s, %llu unrepairable; %s read",
		 (unsigned long long)st->objects, (unsigned long long)st->damaged,
		 (unsigned long long)(dry_run ? st->damaged - st->unrepairable : st->rebuilt),
		 dry_run ? "repairable" : "rebuilt", (unsigned long long)st->unrepairable, read);
	return buf;
}
