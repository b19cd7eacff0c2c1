/* catalog.h — internal entry points of the catalog library for tests: opening at an older schema, upgrading. */
#ifndef MT_CATALOG_H
#define MT_CATALOG_H

#include "matorage-catalog.h"

#define MT_CATALOG_LOCAL __attribute__((visibility("hidden")))

/* mt_catalog_open, but creating or upgrading only up to schema `schema`
 * (tests build old catalogs this way and then open them normally). */
MT_CATALOG_LOCAL int mti_catalog_open_schema(const char *path, int schema, mt_catalog **out,
					    mt_error *err);
/* Upgrade c to schema `target`, one transaction per step. */
MT_CATALOG_LOCAL int mti_catalog_migrate(mt_catalog *c, int target, mt_error *err);

#endif
