/* lock.c — dataset locks and pins: the handshake that keeps gc from deleting what a writer is about to commit. */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dataset.h"
#include "lock.h"

#define DEFAULT_TTL 120.0
#define MIN_TTL 1.0
/* A gc compares mtimes, which stores keep in whole seconds. */
#define MTIME_SLACK 1

static const char *const kind_names[] = {"write", "gc"};

struct mt_dlock {
	mt_store *s;
	int kind;
	double ttl;
	char *dataset, *id, *key, *prefix, *started;
	char **versions;
	size_t nversions;
	struct pin_obj **pins; /* the pin objects this lock wrote and has not deleted */
	size_t npins, pcap;
	size_t pin_next;  /* <n> of the next pin object's key */
	uint64_t pin_seq; /* counts pin objects written whole */
	/* Serialises writes of the lock object, so a refresh never puts back
	 * a body older than a pin_version's. */
	pthread_mutex_t io;
	pthread_mutex_t lock; /* guards the fields below */
	pthread_cond_t cond;
	int stop;
	int lapsed;
	struct timespec last_ok; /* CLOCK_MONOTONIC of the last successful write */
	mt_error lapse;
	pthread_t thread;
	int running;
};

double mti_lock_ttl(void)
{
	const char *v = getenv("MATORAGE_LOCK_TTL");
	char *end;
	double t = v && *v ? strtod(v, &end) : DEFAULT_TTL;
	if (v && *v && (*end || !(t >= MIN_TTL) || t > 86400.0))
		t = DEFAULT_TTL;
	return t;
}

/* ---- who holds a lock ---------------------------------------------------
 * A lock says which process holds it.  When that process would be ours to
 * see (same host, same boot, same pid namespace) and it is gone, its lock
 * is dead at once rather than after its ttl: a writer killed with -9 does
 * not hold gc off (nor a killed gc a writer) for minutes. */

static void read_line(const char *path, char *buf, size_t cap)
{
	buf[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)cap, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The start time of a process (clock ticks after boot), 0 when it is gone:
 * the same pid later given to another process has another start. */
static unsigned long long proc_start(long pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%ld/stat", pid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	/* Field 22; the command name (field 2) may hold spaces and ')'. */
	char *p = strrchr(buf, ')');
	for (int field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	return p ? strtoull(p + 1, NULL, 10) : 0;
}

struct holder {
	char host[256], boot[64], pidns[64];
};

static struct holder self_holder;
static pthread_once_t self_once = PTHREAD_ONCE_INIT;

static void holder_read_self(void)
{
	struct holder *h = &self_holder;
	gethostname(h->host, sizeof h->host - 1);
	read_line("/proc/sys/kernel/random/boot_id", h->boot, sizeof h->boot);
	ssize_t n = readlink("/proc/self/ns/pid", h->pidns, sizeof h->pidns - 1);
	h->pidns[n > 0 ? n : 0] = 0;
}

/* Who this process is, read once: every lock written and judged asks. */
static const struct holder *holder_self(void)
{
	pthread_once(&self_once, holder_read_self);
	return &self_holder;
}

static int json_str_is(json_t *o, const char *key, const char *want)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) && want[0] && !strcmp(json_string_value(v), want);
}

/* 1 when the lock's holder is a process of this machine that is gone. */
static int holder_gone(json_t *body)
{
	const struct holder *me = holder_self();
	json_t *pid = json_object_get(body, "pid"), *start = json_object_get(body, "start");
	if (!json_str_is(body, "host", me->host) || !json_str_is(body, "boot", me->boot) ||
	    !json_str_is(body, "pidns", me->pidns) || !json_is_integer(pid) ||
	    !json_is_integer(start))
		return 0;
	return proc_start((long)json_integer_value(pid)) !=
	       (unsigned long long)json_integer_value(start);
}

static char *lock_body(mt_dlock *l)
{
	json_t *o = json_object(), *v = json_array();
	if (!o || !v) {
		json_decref(o);
		json_decref(v);
		return NULL;
	}
	for (size_t i = 0; i < l->nversions; i++)
		json_array_append_new(v, json_string(l->versions[i]));
	json_object_set_new(o, "format", json_integer(1));
	json_object_set_new(o, "kind", json_string(kind_names[l->kind]));
	json_object_set_new(o, "dataset", json_string(l->dataset));
	const struct holder *me = holder_self();
	json_object_set_new(o, "host", json_string(me->host));
	json_object_set_new(o, "boot", json_string(me->boot));
	json_object_set_new(o, "pidns", json_string(me->pidns));
	json_object_set_new(o, "pid", json_integer((json_int_t)getpid()));
	json_object_set_new(o, "start", json_integer((json_int_t)proc_start((long)getpid())));
	json_object_set_new(o, "started", json_string(l->started));
	json_object_set_new(o, "ttl", json_real(l->ttl));
	json_object_set_new(o, "versions", v);
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* Write the lock object; called with l->io held.  Notes when the time since
 * the last good write came too close to the ttl. */
static int lock_write(mt_dlock *l, mt_error *err)
{
	char *body = lock_body(l);
	int rc = body ? mti_store_put(l->s, l->key, body, strlen(body), MT_PUT_NOSYNC, err)
		      : mti_err(err, MT_ENOMEM, "out of memory");
	free(body);
	double now = mti_mono_seconds();
	pthread_mutex_lock(&l->lock);
	double last = (double)l->last_ok.tv_sec + (double)l->last_ok.tv_nsec / 1e9;
	if (!rc && l->last_ok.tv_sec && now - last > l->ttl * 0.75 && !l->lapsed) {
		l->lapsed = 1;
		mti_err(&l->lapse, MT_ESTATE, "dataset %s: the lock %s went %.1f s without a "
		       "refresh (ttl %.0f s): a gc may have taken it for dead, so nothing is "
		       "committed", l->dataset, l->key, now - last, l->ttl);
	}
	if (!rc)
		clock_gettime(CLOCK_MONOTONIC, &l->last_ok);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

static void *refresher(void *arg)
{
	mt_dlock *l = arg;
	double period = l->ttl / 4;
	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		double t = (double)until.tv_nsec / 1e9 + period;
		until.tv_sec += (time_t)t;
		until.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
		pthread_cond_timedwait(&l->cond, &l->lock, &until);
		if (l->stop)
			break;
		pthread_mutex_unlock(&l->lock);
		mt_error e = {0};
		pthread_mutex_lock(&l->io);
		lock_write(l, &e); /* a failure shows as a lapse at the next check */
		pthread_mutex_unlock(&l->io);
		pthread_mutex_lock(&l->lock);
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

/* Where the locks of `dataset` live: a dataset's name, or the root of
 * another series of versions ("models/NAME"), which a name cannot be. */
static char *locks_prefix(const char *dataset)
{
	return strchr(dataset, '/') ? mti_asprintf("%s/locks/", dataset)
				    : mti_asprintf("datasets/%s/locks/", dataset);
}

int mti_dlock_open(mt_store *s, const char *dataset, int kind, mt_dlock **out, mt_error *err)
{
	*out = NULL;
	mt_dlock *l = calloc(1, sizeof *l);
	if (!l)
		return mti_err(err, MT_ENOMEM, "out of memory");
	pthread_mutex_init(&l->io, NULL);
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->cond, NULL);
	l->s = s;
	l->kind = kind;
	l->ttl = mti_lock_ttl();
	l->dataset = mti_strdup(dataset);
	l->id = mti_asprintf("%016llx", (unsigned long long)mti_random_u64());
	l->prefix = locks_prefix(dataset);
	l->started = mti_now_rfc3339();
	if (l->id && l->prefix)
		l->key = mti_asprintf("%s%s.%s", l->prefix, l->id, kind_names[kind]);
	int rc = l->dataset && l->id && l->prefix && l->started && l->key
			 ? 0
			 : mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc) {
		pthread_mutex_lock(&l->io);
		rc = lock_write(l, err);
		pthread_mutex_unlock(&l->io);
		if (rc)
			mti_err_prefix(err, "dataset %s: taking a lock: ", dataset);
	}
	if (!rc && pthread_create(&l->thread, NULL, refresher, l) != 0)
		rc = mti_err(err, MT_ENOMEM, "dataset %s: cannot start the lock's refresh thread",
			    dataset);
	else if (!rc)
		l->running = 1;
	if (rc) {
		mti_dlock_close(l);
		return rc;
	}
	*out = l;
	return 0;
}

static int strv_add(char ***v, size_t *n, const char *s)
{
	return mti_strv_push(v, n, s, strlen(s));
}

int mti_dlock_pin_version(mt_dlock *l, const char *version, mt_error *err)
{
	pthread_mutex_lock(&l->io);
	int rc = 0, have = l->nversions == 1 && !strcmp(l->versions[0], version);
	if (!have) {
		mt_strv_free(l->versions, l->nversions);
		l->versions = NULL;
		l->nversions = 0;
		if (strv_add(&l->versions, &l->nversions, version))
			rc = mti_err(err, MT_ENOMEM, "out of memory");
	}
	if (!rc && !have)
		rc = lock_write(l, err);
	pthread_mutex_unlock(&l->io);
	return rc;
}

/* ---- pins ----------------------------------------------------------------
 * A pin object is never rewritten, so a gc reads each whole or not at all.
 * Were every pin its own object for the writer's whole life, each look for
 * a gc (a listing of locks/) would list all of them again: a writer of N
 * shards would cost N^2.  So a new pin object also carries the keys of
 * PIN_FANOUT - 1 older ones of the same level (a binary counter of base
 * PIN_FANOUT), which are then deleted: a writer holds a few pin objects per
 * level, O(log N) in all, and writes each key O(log N) times.
 *
 * An absorbed object is deleted only after a look for gc locks that began
 * once the object replacing it was written, and found none live.  A gc
 * whose listing of locks/ saw the absorbed object and not its replacement
 * took its own lock before that listing, so before the look, which then
 * saw it live and left the object in place; any later gc lists the
 * replacement.  Either way no gc misses a key that was ever pinned. */

#define PIN_FANOUT 4

/* TAKEN: being absorbed by an object not yet written; STALE: deleted at release only. */
enum { PIN_WRITING, PIN_WRITTEN, PIN_TAKEN, PIN_ABSORBED, PIN_STALE };

struct pin_obj {
	char *key;
	mt_buf body; /* the keys it holds, a line each (freed once absorbed) */
	unsigned level;
	int state;
	uint64_t after; /* PIN_ABSORBED: deletable after a clean look that began past this seq */
	struct pin_obj **absorbed; /* PIN_WRITING: the objects it replaces */
	size_t nabsorbed;
};

static void pin_obj_free(struct pin_obj *o)
{
	if (!o)
		return;
	free(o->key);
	mti_buf_free(&o->body);
	free(o->absorbed);
	free(o);
}

static int pins_push(mt_dlock *l, struct pin_obj *o)
{
	struct pin_obj **v = mti_grow(l->pins, l->npins, &l->pcap, sizeof *v, 8);
	if (!v)
		return MT_ENOMEM;
	l->pins = v;
	l->pins[l->npins++] = o;
	return 0;
}

/* Take older written objects of o's level into o while there are enough of
 * them, raising its level each time.  Called with l->lock held. */
static int pin_absorb(mt_dlock *l, struct pin_obj *o)
{
	for (;;) {
		size_t have = 0;
		for (size_t i = 0; i < l->npins; i++)
			have += l->pins[i]->state == PIN_WRITTEN && l->pins[i]->level == o->level;
		if (have < PIN_FANOUT - 1)
			return 0;
		struct pin_obj **a = realloc(o->absorbed, (o->nabsorbed + have) * sizeof *a);
		if (!a)
			return MT_ENOMEM;
		o->absorbed = a;
		for (size_t i = 0; i < l->npins; i++) {
			struct pin_obj *p = l->pins[i];
			if (p->state != PIN_WRITTEN || p->level != o->level)
				continue;
			if (mti_buf_append(&o->body, p->body.data, p->body.len))
				return MT_ENOMEM;
			p->state = PIN_TAKEN;
			o->absorbed[o->nabsorbed++] = p;
		}
		o->level++;
	}
}

/* The put of o is over: on success its absorbed objects may go once a gc
 * look has followed; on failure they stay as they were, and o's key (which
 * may have landed all the same) is only deleted at release. */
static void pin_done(mt_dlock *l, struct pin_obj *o, int ok)
{
	pthread_mutex_lock(&l->lock);
	uint64_t seq = ok ? ++l->pin_seq : 0;
	for (size_t i = 0; i < o->nabsorbed; i++) {
		struct pin_obj *p = o->absorbed[i];
		p->state = ok ? PIN_ABSORBED : PIN_WRITTEN;
		p->after = seq;
		if (ok)
			mti_buf_free(&p->body);
	}
	free(o->absorbed);
	o->absorbed = NULL;
	o->nabsorbed = 0;
	o->state = ok ? PIN_WRITTEN : PIN_STALE;
	if (!ok)
		mti_buf_free(&o->body);
	pthread_mutex_unlock(&l->lock);
}

int mti_dlock_pin_keys(mt_dlock *l, const char *const *keys, size_t n, mt_error *err)
{
	if (!n)
		return 0;
	struct pin_obj *o = calloc(1, sizeof *o);
	int rc = o ? 0 : MT_ENOMEM;
	for (size_t i = 0; !rc && i < n; i++)
		if (mti_buf_append(&o->body, keys[i], strlen(keys[i])) ||
		    mti_buf_append(&o->body, "\n", 1))
			rc = MT_ENOMEM;
	pthread_mutex_lock(&l->lock);
	if (!rc && !(o->key = mti_asprintf("%s%s.%zu.pin", l->prefix, l->id, l->pin_next)))
		rc = MT_ENOMEM;
	if (!rc)
		rc = pins_push(l, o);
	if (!rc) {
		l->pin_next++;
		/* Kept on failure too: pins_push made it ours to delete. */
		if (pin_absorb(l, o)) {
			for (size_t i = 0; i < o->nabsorbed; i++)
				o->absorbed[i]->state = PIN_WRITTEN;
			o->nabsorbed = 0;
			rc = MT_ENOMEM;
			o->state = PIN_STALE;
		}
	} else if (o) {
		pin_obj_free(o);
	}
	pthread_mutex_unlock(&l->lock);
	if (rc)
		return mti_err(err, MT_ENOMEM, "out of memory");
	rc = mti_store_put(l->s, o->key, o->body.data, o->body.len, MT_PUT_NOSYNC, err);
	pin_done(l, o, rc == 0);
	return rc;
}

/* After a look for gc locks that began at pin_seq `seen` and found none
 * live: delete the pin objects replaced before it. */
static void pins_prune(mt_dlock *l, uint64_t seen)
{
	pthread_mutex_lock(&l->lock);
	size_t n = 0, kept = 0;
	for (size_t i = 0; i < l->npins; i++)
		n += l->pins[i]->state == PIN_ABSORBED && l->pins[i]->after <= seen;
	struct pin_obj **gone = n ? calloc(n, sizeof *gone) : NULL;
	const char **keys = n ? calloc(n, sizeof *keys) : NULL;
	if (!gone || !keys) {
		pthread_mutex_unlock(&l->lock);
		free(gone);
		free(keys);
		return; /* nothing to do, or no memory: release deletes them */
	}
	n = 0;
	for (size_t i = 0; i < l->npins; i++) {
		struct pin_obj *p = l->pins[i];
		if (p->state == PIN_ABSORBED && p->after <= seen) {
			keys[n] = p->key;
			gone[n++] = p;
		} else {
			l->pins[kept++] = p;
		}
	}
	l->npins = kept;
	pthread_mutex_unlock(&l->lock);
	mt_error e = {0};
	int rc = mti_store_del(l->s, keys, n, &e);
	pthread_mutex_lock(&l->lock);
	for (size_t i = 0; i < n; i++) {
		if (rc && !pins_push(l, gone[i])) {
			gone[i]->state = PIN_STALE; /* release tries again */
			continue;
		}
		pin_obj_free(gone[i]);
	}
	pthread_mutex_unlock(&l->lock);
	free(gone);
	free(keys);
}

/* ---- reading the locks of a dataset ------------------------------------ */

struct lock_obj {
	char *key;
	char *id;
	int kind; /* -1: a pin object */
	int64_t mtime;
};

struct lock_list {
	size_t plen;
	struct lock_obj *v;
	size_t n, cap;
	int64_t now;
};

static int collect_lock(void *ud, const mt_obj *o)
{
	struct lock_list *ll = ud;
	const char *rel = o->key + ll->plen, *dot = strrchr(rel, '.');
	int kind = -1;
	size_t idlen = strcspn(rel, ".");
	if (strchr(rel, '/') || !dot)
		return 0; /* not ours: ignore */
	for (int k = 0; k < 2; k++)
		if (!strcmp(dot + 1, kind_names[k]))
			kind = k;
	if (kind < 0 && strcmp(dot + 1, "pin"))
		return 0;
	if (o->mtime > ll->now)
		ll->now = o->mtime;
	struct lock_obj *v = mti_grow(ll->v, ll->n, &ll->cap, sizeof *v, 16);
	if (!v)
		return MT_ENOMEM;
	ll->v = v;
	struct lock_obj *lo = &ll->v[ll->n];
	lo->key = mti_strdup(o->key);
	lo->id = strndup(rel, idlen);
	lo->kind = kind;
	lo->mtime = o->mtime;
	if (!lo->key || !lo->id) {
		free(lo->key);
		free(lo->id);
		return MT_ENOMEM;
	}
	ll->n++;
	return 0;
}

static void lock_list_free(struct lock_list *ll)
{
	for (size_t i = 0; i < ll->n; i++) {
		free(ll->v[i].key);
		free(ll->v[i].id);
	}
	free(ll->v);
}

static int list_locks(mt_store *s, const char *dataset, struct lock_list *ll, mt_error *err)
{
	char *prefix = locks_prefix(dataset);
	if (!prefix)
		return mti_err(err, MT_ENOMEM, "out of memory");
	*ll = (struct lock_list){.plen = strlen(prefix)};
	int rc = mti_store_list_all(s, prefix, collect_lock, ll, err);
	free(prefix);
	if (rc == MT_ENOMEM)
		rc = mti_err(err, rc, "dataset %s: listing locks: out of memory", dataset);
	if (rc)
		lock_list_free(ll);
	return rc;
}

/* A lock object's body: its ttl, and (for writers) the pinned versions and
 * who holds it.  1 when the object is gone (released meanwhile). */
static int read_lock(mt_store *s, const char *key, double *ttl, json_t **body, mt_error *err)
{
	void *data = NULL;
	size_t len = 0;
	mt_error e = {0};
	*ttl = mti_lock_ttl();
	*body = NULL;
	int rc = mti_store_get(s, key, 0, UINT64_MAX, &data, &len, &e);
	if (rc == MT_ENOTFOUND)
		return 1;
	if (rc)
		return mti_err_copy(err, &e);
	json_t *o = json_loadb(data, len, 0, NULL);
	free(data);
	json_t *t = o ? json_object_get(o, "ttl") : NULL;
	if (json_is_number(t) && json_number_value(t) >= MIN_TTL)
		*ttl = json_number_value(t);
	*body = o;
	return 0;
}

int mti_dlock_wait_gc(mt_dlock *l, mt_error *err)
{
	for (int round = 0;; round++) {
		pthread_mutex_lock(&l->lock);
		uint64_t seen = l->pin_seq;
		pthread_mutex_unlock(&l->lock);
		struct lock_list ll;
		int rc = list_locks(l->s, l->dataset, &ll, err), live = 0;
		for (size_t i = 0; !rc && i < ll.n && !live; i++) {
			if (ll.v[i].kind != MT_LOCK_GC || !strcmp(ll.v[i].key, l->key))
				continue;
			double ttl;
			json_t *body;
			rc = read_lock(l->s, ll.v[i].key, &ttl, &body, err);
			if (rc == 0 && (double)(ll.now - ll.v[i].mtime) <= ttl + MTIME_SLACK &&
			    !holder_gone(body))
				live = 1;
			json_decref(body);
			rc = rc == 1 ? 0 : rc;
		}
		lock_list_free(&ll);
		if (!rc && !live)
			pins_prune(l, seen);
		if (rc || !live)
			return rc;
		/* A gc is deleting: what we saw may be gone when it ends. */
		usleep(round < 10 ? 100000 : 500000);
	}
}

int mti_dlock_check(mt_dlock *l, mt_error *err)
{
	pthread_mutex_lock(&l->io);
	int rc = lock_write(l, err);
	pthread_mutex_unlock(&l->io);
	if (rc)
		return mti_err_prefix(err, "dataset %s: refreshing the lock: ", l->dataset);
	pthread_mutex_lock(&l->lock);
	if (l->lapsed)
		rc = mti_err_copy(err, &l->lapse);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void mti_dlock_close(mt_dlock *l)
{
	if (!l)
		return;
	if (l->running) {
		pthread_mutex_lock(&l->lock);
		l->stop = 1;
		pthread_cond_broadcast(&l->cond);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	/* Pins first: a pin whose lock is gone protects nothing, and a gc
	 * removes leftovers of either kind once they are old. */
	mt_error e = {0};
	const char **keys = l->npins ? calloc(l->npins, sizeof *keys) : NULL;
	for (size_t i = 0; keys && i < l->npins; i++)
		keys[i] = l->pins[i]->key;
	if (keys)
		mti_store_del(l->s, keys, l->npins, &e);
	free(keys);
	if (l->key && l->last_ok.tv_sec)
		mti_store_del(l->s, (const char *const *)&l->key, 1, &e);
	for (size_t i = 0; i < l->npins; i++)
		pin_obj_free(l->pins[i]);
	free(l->pins);
	mt_strv_free(l->versions, l->nversions);
	free(l->dataset);
	free(l->id);
	free(l->key);
	free(l->prefix);
	free(l->started);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	pthread_mutex_destroy(&l->io);
	free(l);
}

/* ---- what gc keeps ------------------------------------------------------ */

static int pins_add_lines(mt_pins *p, const char *data, size_t len)
{
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(data + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - data) : len;
		if (end > i) {
			char *k = strndup(data + i, end - i);
			int rc = k ? strv_add(&p->keys, &p->nkeys, k) : MT_ENOMEM;
			free(k);
			if (rc)
				return rc;
		}
		i = end + 1;
	}
	return 0;
}

/* A live writer lock: note its versions and who holds it. */
static int pins_take_writer(mt_pins *p, json_t *body)
{
	json_t *v = json_object_get(body, "versions"), *x;
	size_t i;
	json_array_foreach(v, i, x)
		if (json_is_string(x) && strv_add(&p->versions, &p->nversions, json_string_value(x)))
			return MT_ENOMEM;
	p->writers++;
	if (!p->writer) {
		json_t *h = json_object_get(body, "host"), *pid = json_object_get(body, "pid");
		p->writer = mti_asprintf("%s pid %lld", json_is_string(h) ? json_string_value(h) : "?",
					json_is_integer(pid) ? (long long)json_integer_value(pid) : -1LL);
		if (!p->writer)
			return MT_ENOMEM;
	}
	return 0;
}

enum { LOCK_LIVE = 1, LOCK_DEAD = 2 };

/* Sort the locks: which are live, which are long dead. */
static int pins_judge_locks(mt_store *s, const struct lock_list *ll, const mt_dlock *self,
			    mt_pins *p, int *state, mt_error *err)
{
	for (size_t i = 0; i < ll->n; i++) {
		const struct lock_obj *lo = &ll->v[i];
		if (lo->kind < 0 || (self && !strcmp(lo->key, self->key)))
			continue;
		double ttl;
		json_t *body = NULL;
		int rc = read_lock(s, lo->key, &ttl, &body, err);
		if (rc < 0)
			return rc;
		double age = (double)(ll->now - lo->mtime);
		int gone = rc == 0 && holder_gone(body);
		if (rc == 0 && age <= ttl + MTIME_SLACK && !gone) {
			state[i] = LOCK_LIVE;
			if (lo->kind == MT_LOCK_WRITE && pins_take_writer(p, body)) {
				json_decref(body);
				return mti_err(err, MT_ENOMEM, "out of memory");
			}
		} else if (rc == 0 && (gone || age > 2 * ttl + MTIME_SLACK)) {
			state[i] = LOCK_DEAD;
			if (strv_add(&p->dead, &p->ndead, lo->key)) {
				json_decref(body);
				return mti_err(err, MT_ENOMEM, "out of memory");
			}
		}
		json_decref(body);
	}
	return 0;
}

/* The state of the lock a pin object belongs to: live, dead, or 0. */
static int pin_owner_state(const struct lock_list *ll, const int *state, const char *id)
{
	int seen = 0;
	for (size_t j = 0; j < ll->n; j++) {
		if (ll->v[j].kind < 0 || strcmp(ll->v[j].id, id))
			continue;
		seen = 1;
		if (state[j])
			return state[j];
	}
	return seen ? 0 : LOCK_DEAD;
}

static int pins_read_pins(mt_store *s, const struct lock_list *ll, const int *state, mt_pins *p,
			  mt_error *err)
{
	for (size_t i = 0; i < ll->n; i++) {
		const struct lock_obj *lo = &ll->v[i];
		if (lo->kind >= 0)
			continue;
		/* A lock is written before its pins and removed after them. */
		int owner = pin_owner_state(ll, state, lo->id);
		if (owner == LOCK_DEAD) {
			if (strv_add(&p->dead, &p->ndead, lo->key))
				return mti_err(err, MT_ENOMEM, "out of memory");
			continue;
		}
		if (owner != LOCK_LIVE)
			continue;
		void *data = NULL;
		size_t len = 0;
		mt_error e = {0};
		int rc = mti_store_get(s, lo->key, 0, UINT64_MAX, &data, &len, &e);
		if (rc == MT_ENOTFOUND)
			continue; /* its writer finished meanwhile: its manifest is listed later */
		if (rc)
			return mti_err_copy(err, &e);
		rc = pins_add_lines(p, data, len);
		free(data);
		if (rc)
			return mti_err(err, MT_ENOMEM, "out of memory");
	}
	return 0;
}

int mti_dlock_pins(mt_store *s, const char *dataset, const mt_dlock *self, mt_pins *out,
		  mt_error *err)
{
	*out = (mt_pins){0};
	struct lock_list ll;
	int rc = list_locks(s, dataset, &ll, err);
	if (rc)
		return rc;
	/* Without a lock of its own (a dry run) the caller has no object of
	 * this moment to read the store's clock from. */
	out->now = ll.n ? ll.now : (int64_t)time(NULL);
	if (!self && out->now < (int64_t)time(NULL))
		out->now = (int64_t)time(NULL);
	int *state = calloc(ll.n ? ll.n : 1, sizeof *state);
	if (!state)
		rc = mti_err(err, MT_ENOMEM, "out of memory");
	if (!rc)
		rc = pins_judge_locks(s, &ll, self, out, state, err);
	if (!rc)
		rc = pins_read_pins(s, &ll, state, out, err);
	free(state);
	lock_list_free(&ll);
	if (rc) {
		mti_pins_free(out);
		return mti_err_prefix(err, "dataset %s: reading locks: ", dataset);
	}
	if (out->nkeys)
		qsort(out->keys, out->nkeys, sizeof *out->keys, mti_strp_cmp);
	return 0;
}

int mti_pins_has_key(const mt_pins *p, const char *key)
{
	return p->nkeys && bsearch(&key, p->keys, p->nkeys, sizeof *p->keys, mti_strp_cmp);
}

int mti_gc_may_delete(const mt_obj *o, char *const *ref, size_t nref, int64_t cutoff,
		      const mt_pins *p)
{
	const char *k = o->key;
	if (nref && bsearch(&k, ref, nref, sizeof *ref, mti_strp_cmp))
		return 0;
	return o->mtime <= cutoff && !mti_pins_has_key(p, k);
}

void mti_pins_free(mt_pins *p)
{
	mt_strv_free(p->keys, p->nkeys);
	mt_strv_free(p->versions, p->nversions);
	mt_strv_free(p->dead, p->ndead);
	free(p->writer);
	*p = (mt_pins){0};
}
