/* util.c — error records, string and buffer helpers shared by the library's modules. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "util.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

int mt_error_set(mt_error *err, int code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		err->code = code;
		vsnprintf(err->message, sizeof err->message, fmt, ap);
		va_end(ap);
	}
	return code;
}

#if !defined(__SANITIZE_ADDRESS__)
#define HUGE_MMAP 1
#endif

/* r bytes (a multiple of MTI_HUGE_PAGE) at an MTI_HUGE_PAGE boundary: a
 * mapping one huge page too long, its unaligned head and tail cut off. */
static void *huge_map(size_t r)
{
#ifdef HUGE_MMAP
	uint8_t *m = mmap(NULL, r + MTI_HUGE_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	size_t head = (size_t)(-(uintptr_t)m & (MTI_HUGE_PAGE - 1));
	if (head)
		munmap(m, head);
	munmap(m + head + r, MTI_HUGE_PAGE - head);
	m += head;
#else
	void *m;
	if (posix_memalign(&m, MTI_HUGE_PAGE, r))
		return NULL;
#endif
	madvise(m, r, MADV_HUGEPAGE); /* advice only: 4 KiB pages still work */
	return m;
}

void *mti_huge_alloc(size_t n, size_t *cap)
{
	void *p = NULL;
	*cap = 0;
	if (n > SIZE_MAX - 2 * (size_t)MTI_HUGE_PAGE)
		return NULL;
	if (n >= MTI_HUGE_MIN) {
		n = (n + MTI_HUGE_PAGE - 1) & ~(size_t)(MTI_HUGE_PAGE - 1);
		p = huge_map(n);
	} else
		p = malloc(n ? n : 1);
	*cap = p ? n : 0;
	return p;
}

void mti_copy(void *dst, const void *src, size_t n)
{
#ifdef __SSE2__
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t i = 0;
	/* Below 2 KiB glibc does not use rep movsb; elsewhere memcpy is the
	 * faster (by up to a fifth from memory). */
	if (n >= 2048 && (((uintptr_t)d - (uintptr_t)s) & 4095) - 1 < 31)
		for (; i + 64 <= n; i += 64) {
			__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
			__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 16));
			__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 32));
			__m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + i + 48));
			_mm_storeu_si128((__m128i *)(void *)(d + i), a);
			_mm_storeu_si128((__m128i *)(void *)(d + i + 16), b);
			_mm_storeu_si128((__m128i *)(void *)(d + i + 32), c);
			_mm_storeu_si128((__m128i *)(void *)(d + i + 48), e);
		}
	memcpy(d + i, s + i, n - i);
#else
	memcpy(dst, src, n);
#endif
}

void mti_huge_free(void *p, size_t cap)
{
#ifdef HUGE_MMAP
	if (p && cap >= MTI_HUGE_MIN) {
		munmap(p, cap);
		return;
	}
#endif
	(void)cap;
	free(p);
}

int mti_err_prefix(mt_error *err, const char *fmt, ...)
{
	if (!err)
		return MT_EINVAL;
	char old[sizeof err->message];
	memcpy(old, err->message, sizeof old);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	if (n >= 0 && (size_t)n < sizeof err->message)
		memcpy(err->message + n, old, sizeof err->message - (size_t)n - 1);
	err->message[sizeof err->message - 1] = '\0';
	return err->code;
}

int mti_err_copy(mt_error *err, const mt_error *from)
{
	if (err && err != from)
		*err = *from;
	return from->code;
}

char *mti_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

int mti_url_userinfo(const char *url, size_t *off, size_t *len)
{
	const char *scheme = url ? strstr(url, "://") : NULL;
	if (!scheme)
		return 0;
	const char *auth = scheme + 3;
	const char *at = memchr(auth, '@', strcspn(auth, "/?#"));
	if (!at)
		return 0;
	/* The last '@' of the authority ends the userinfo (a password may hold one). */
	for (const char *a; (a = memchr(at + 1, '@', strcspn(at + 1, "/?#")));)
		at = a;
	*off = (size_t)(auth - url);
	*len = (size_t)(at + 1 - auth);
	return 1;
}

char *mti_url_redact(const char *url)
{
	size_t off, len;
	if (!mti_url_userinfo(url, &off, &len))
		return mti_strdup(url);
	return mti_asprintf("%.*s***@%s", (int)off, url, url + off + len);
}

char *mti_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return s;
}

int mti_buf_reserve(mt_buf *b, size_t extra)
{
	if (b->cap - b->len >= extra)
		return 0;
	size_t want = b->len + extra;
	if (want < b->len)
		return MT_ENOMEM;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < want)
		cap = cap > SIZE_MAX / 2 ? want : cap * 2;
	uint8_t *p = realloc(b->data, cap);
	if (!p)
		return MT_ENOMEM;
	b->data = p;
	b->cap = cap;
	return 0;
}

int mti_buf_append(mt_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (mti_buf_reserve(b, n))
		return MT_ENOMEM;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

void mti_buf_free(mt_buf *b)
{
	free(b->data);
	b->data = NULL;
	b->len = b->cap = 0;
}

void *mti_grow(void *v, size_t n, size_t *cap, size_t size, size_t first)
{
	if (n < *cap)
		return v;
	size_t ncap = *cap ? *cap : first;
	while (ncap <= n) {
		if (ncap > SIZE_MAX / 2 / size)
			return NULL;
		ncap *= 2;
	}
	void *nv = realloc(v, ncap * size);
	if (nv)
		*cap = ncap;
	return nv;
}

int mti_strv_push(char ***v, size_t *n, const char *s, size_t len)
{
	if ((*n & (*n - 1)) == 0) { /* 0 or a power of two: the vector is full */
		if (*n > SIZE_MAX / 2 / sizeof **v)
			return MT_ENOMEM;
		char **nv = realloc(*v, (*n ? *n * 2 : 1) * sizeof *nv);
		if (!nv)
			return MT_ENOMEM;
		*v = nv;
	}
	if (!((*v)[*n] = strndup(s, len)))
		return MT_ENOMEM;
	(*n)++;
	return 0;
}

int mt_name_check(const char *name, const char *what, mt_error *err)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > 128)
		return mti_err(err, MT_EINVAL, "%s name must be 1 to 128 characters", what);
	if (name[0] == '.' || name[0] == '-')
		return mti_err(err, MT_EINVAL, "%s name '%s' must not start with '%c'", what, name,
			      name[0]);
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return mti_err(err, MT_EINVAL,
				      "%s name '%s' may hold only letters, digits, '.', '_' and '-'",
				      what, name);
	}
	/* ".." reads as a parent directory to every path and key tool. */
	if (strstr(name, ".."))
		return mti_err(err, MT_EINVAL, "%s name '%s' must not contain '..'", what, name);
	return 0;
}

/* One decimal number of 1 to 3 digits at *p, advancing *p. */
static int parity_number(const char **p, int *out)
{
	int v = 0, digits = 0;
	while (**p >= '0' && **p <= '9' && digits < 4) {
		v = v * 10 + (**p - '0');
		(*p)++;
		digits++;
	}
	*out = v;
	return digits >= 1 && digits <= 3;
}

int mt_parity_parse(const char *text, int *k, int *m, mt_error *err)
{
	const char *p = text ? text : "";
	int kk = 0, mm = 0;
	int ok = parity_number(&p, &kk) && *p++ == '+' && parity_number(&p, &mm) && !*p;
	if (!ok || kk < 1 || kk > 64 || mm < 1 || mm > 16)
		return mti_err(err, MT_EINVAL, "parity '%s' is not K+M with K from 1 to 64 shards "
			      "per group and M from 1 to 16 parity objects (e.g. 8+2)",
			      text ? text : "");
	*k = kk;
	*m = mm;
	return 0;
}

int mti_version_auto_number(const char *name, uint64_t *n)
{
	if (name[0] != 'v' || !name[1] || name[1] == '0')
		return 0;
	size_t digits = strspn(name + 1, "0123456789");
	if (name[1 + digits] || digits > MT_VERSION_DIGITS)
		return 0;
	if (n)
		*n = strtoull(name + 1, NULL, 10);
	return 1;
}

int mti_version_name_check(const char *name, mt_error *err)
{
	int rc = mt_name_check(name, "version", err);
	if (rc)
		return rc;
	if (!strcasecmp(name, "latest"))
		return mti_err(err, MT_EINVAL, "version name '%s' is reserved: it means the newest "
			      "version", name);
	/* "v" and digits is the automatic form: v7, never v07 (it would sort
	 * and read as v7) and never more digits than numbering goes. */
	size_t digits = strspn(name + 1, "0123456789");
	if (name[0] == 'v' && digits && !name[1 + digits] && !mti_version_auto_number(name, NULL))
		return mti_err(err, MT_EINVAL, "version name '%s' is not a valid automatic name "
			      "(v1 to v%.*s, no leading zeros)", name, MT_VERSION_DIGITS,
			      "999999999999999999999");
	return 0;
}

int mti_strp_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

size_t mti_bisect_u64(const void *base, size_t n, size_t stride, uint64_t v)
{
	const unsigned char *b = base;
	size_t lo = 0, hi = n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t x;
		memcpy(&x, b + mid * stride, sizeof x);
		if (x <= v)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int mti_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

int mti_add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}

double mti_mono_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The CPUs this process may run on, not all the machine's: a batch scheduler's task
 * (Slurm's task/affinity or task/cgroup), taskset or a container's cpuset gets as many
 * threads as CPUs it was given. */
int mti_ncpus(void)
{
	cpu_set_t set;
	long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
							      : sysconf(_SC_NPROCESSORS_ONLN);
	return n < 1 ? 1 : n > 256 ? 256 : (int)n;
}

int mti_mkdir_parent(const char *path, const char *what, mt_error *err)
{
	char *dir = mti_strdup(path);
	if (!dir)
		return mti_err(err, MT_ENOMEM, "out of memory");
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
			int rc = mti_err(err, MT_EIO, "%s %s: %s", what, dir, strerror(errno));
			free(dir);
			return rc;
		}
		*p = '/';
	}
	free(dir);
	return 0;
}

void mt_free(void *p)
{
	free(p);
}

void mt_strv_free(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

uint64_t mti_random_u64(void)
{
	uint64_t r;
	if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
		return r;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)ts.tv_sec) +
	       (uint64_t)getpid();
}
