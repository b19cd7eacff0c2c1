/* api.c — version, error strings and dtype tables of the public API. */
#include <string.h>

#include "util.h"

#define MT_STR_(x) #x
#define MT_STR(x) MT_STR_(x)

const char *mt_version(void)
{
	return MT_STR(MT_VERSION_MAJOR) "." MT_STR(MT_VERSION_MINOR) "." MT_STR(MT_VERSION_PATCH);
}

const char *mt_strerror(int code)
{
	switch (code) {
#define MT_ERR_CASE_(name, value, msg) \
	case name:                     \
		return msg;
		MT_ERRORS(MT_ERR_CASE_)
#undef MT_ERR_CASE_
	}
	return "unknown error";
}

static const struct {
	const char *name;
	size_t size;
} dtypes[] = {
	[MT_DTYPE_INVALID] = {"invalid", 0}, [MT_BOOL] = {"bool", 1},
	[MT_INT8] = {"int8", 1},             [MT_INT16] = {"int16", 2},
	[MT_INT32] = {"int32", 4},           [MT_INT64] = {"int64", 8},
	[MT_UINT8] = {"uint8", 1},           [MT_UINT16] = {"uint16", 2},
	[MT_UINT32] = {"uint32", 4},         [MT_UINT64] = {"uint64", 8},
	[MT_FLOAT16] = {"float16", 2},       [MT_FLOAT32] = {"float32", 4},
	[MT_FLOAT64] = {"float64", 8},       [MT_BFLOAT16] = {"bfloat16", 2},
	[MT_STR] = {"str", 1},
};

#define NDTYPES (sizeof dtypes / sizeof dtypes[0])

size_t mt_dtype_size(mt_dtype t)
{
	return (unsigned)t < NDTYPES ? dtypes[t].size : 0;
}

const char *mt_dtype_name(mt_dtype t)
{
	return (unsigned)t < NDTYPES ? dtypes[t].name : "invalid";
}

mt_dtype mt_dtype_parse(const char *name)
{
	for (size_t i = 1; name && i < NDTYPES; i++)
		if (strcmp(name, dtypes[i].name) == 0)
			return (mt_dtype)i;
	return MT_DTYPE_INVALID;
}

uint64_t mt_attr_items(const mt_attr *a)
{
	uint64_t n = 1;
	for (int i = 0; i < a->rank; i++)
		n *= a->shape[i];
	return n;
}

char *mt_url_redact(const char *url)
{
	return mti_url_redact(url);
}
