/* app-catalog.c — how the command line and the browser name stores in the catalog. */
#include "app.h"

const char *app_store_name(const struct app_ctx *app)
{
	return app->store_url && *app->store_url ? app->store_url : APP_LOCAL;
}
