/* repair-siblings.c — shards and fragments a version shares with another version of the dataset, rebuilt from that version's parity when its own cannot (a child shares its parent's shards and full fragments, so an unprotected parent heals from its protected child). */
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "repair.h"

/* The records under prefix, by version name. */
struct records {
	const char *prefix;
	char **v;
	size_t n;
};

static int record_name(void *ud, const mt_obj *o)
{
	struct records *l = ud;
	const char *name = o->key + strlen(l->prefix);
	size_t len = strlen(name);
	if (len <= 5 || strcmp(name + len - 5, ".json") || strchr(name, '/'))
		return 0;
	return mti_strv_push(&l->v, &l->n, name, len - 5) ? MT_ENOMEM : 0;
}

/* Rebuilt bytes are right when they hash to the shard's name. */
static int sha_check(void *ud, const void *buf, size_t len)
{
	const rp_obj *o = ud;
	char got[MT_SHA256_HEX];
	mt_error e = {0};
	return mti_sha256_hex(buf, len, got, &e) || strcmp(got, o->sha256);
}

/* Object o (a shard, or a fragment) from the group of p that holds its
 * sha256 (among p's shard groups, or its fragment groups): 1 when p has
 * no such member or its group could not rebuild it. */
static int sibling_one(rp_ctx *c, const mti_prec *p, rp_obj *o, const char *source,
		       mt_error *err)
{
	int frags = o->kind == MT_REPAIR_FRAGMENT;
	const mti_pgroup *gs = frags ? p->fgroups : p->groups;
	size_t ng = frags ? p->nfgroups : p->ngroups, member = (size_t)-1;
	for (size_t g = 0; g < ng && member == (size_t)-1; g++)
		for (size_t j = 0; j < gs[g].nmembers; j++)
			if (!strcmp(gs[g].members[j].sha256, o->sha256) &&
			    gs[g].members[j].bytes == o->bytes)
				member = gs[g].members[j].shard;
	if (member == (size_t)-1 || o->bytes > SIZE_MAX)
		return 1;
	void *buf = malloc(o->bytes ? (size_t)o->bytes : 1);
	if (!buf)
		return mti_err(err, MT_ENOMEM, "out of memory");
	uint64_t nread = 0;
	mt_error e = {0};
	int rc = frags ? mti_parity_rebuild_fragment(c->s, p, member, (size_t)o->bytes, sha_check,
						     o, buf, &nread, &e)
		       : mti_parity_rebuild_span(c->s, p, member, 0, (size_t)o->bytes, NULL,
						 sha_check, o, buf, &nread, &e);
	mti_rp_add_read(c, o, nread);
	if (rc == MT_ENOMEM) {
		free(buf);
		return mti_err_copy(err, &e);
	}
	if (rc) { /* too much of that group is damaged too */
		free(buf);
		return 1;
	}
	o->data = buf;
	o->source = source;
	rc = mti_rp_write_back(c, o, err);
	if (rc == MT_ECORRUPT) {
		free(o->data);
		o->data = NULL;
		o->source = NULL;
		o->state = RP_DAMAGED;
		return 1;
	}
	return rc;
}

/* Every object of `kind` still damaged, from the record of version `name`. */
static int sibling_record(rp_ctx *c, int kind, const char *name, mt_error *err)
{
	mti_prec *p = NULL;
	mt_error e = {0};
	if (mti_prec_load(c->s, c->dataset, name, &p, &e))
		return 0; /* an unreadable record is another version's repair to report */
	/* The name lives as long as the reports that name it (rp_version). */
	char *name_of = mti_asprintf("parity of %s", name);
	int rc = name_of && !mti_strv_push(&c->held, &c->nheld, name_of, strlen(name_of))
			 ? 0
			 : mti_err(err, MT_ENOMEM, "out of memory");
	free(name_of);
	const char *source = rc ? NULL : c->held[c->nheld - 1];
	for (size_t i = 0; !rc && i < c->nobjs; i++) {
		rp_obj *o = &c->objs[i];
		if (o->kind != kind || o->state != RP_DAMAGED)
			continue;
		int r = sibling_one(c, p, o, source, err);
		rc = r == 1 ? 0 : r;
	}
	mti_prec_free(p);
	return rc;
}

int mti_rp_siblings(rp_ctx *c, int kind, mt_error *err)
{
	size_t left = 0;
	for (size_t i = 0; i < c->nobjs; i++)
		left += c->objs[i].kind == kind && c->objs[i].state == RP_DAMAGED;
	if (!left)
		return 0;
	struct records l = {0};
	char *prefix = mti_asprintf("datasets/%s/protect/", c->dataset);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	l.prefix = prefix;
	int rc = mti_store_list_all(c->s, prefix, record_name, &l, err);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "out of memory");
	for (size_t i = 0; !rc && i < l.n; i++)
		if (strcmp(l.v[i], c->version))
			rc = sibling_record(c, kind, l.v[i], err);
	mt_strv_free(l.v, l.n);
	free(prefix);
	return rc;
}
