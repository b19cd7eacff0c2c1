/* tui-main.h — the browser's one entry point, for the command line: open it on the terminal. */
#ifndef MT_TUI_MAIN_H
#define MT_TUI_MAIN_H

#include "app.h"

struct tui;

/* The browser's `:run SCRIPT.lua [KEY=VALUE ...]`: a Lua recipe as a job (recipe.c).
 * The command passes it in, so the browser's core builds without the Lua runner. */
typedef void (*tui_recipe_fn)(struct tui *t, const char *line);
void tui_recipe_run(struct tui *t, const char *line);

/* The interactive browser on the terminal, on the stores app names (app must outlive
 * it), on dataset `open`'s versions when not NULL.  Returns 0 when the user quit, or
 * an MT_E code with err filled: it could not start (no catalog, no such dataset, no
 * terminal) or the terminal closed under it.  Callers check first that standard
 * input and output are a terminal. */
int tui_main(const struct app_ctx *app, int read_only, const char *open, tui_recipe_fn recipe,
	     mt_error *err);

#endif
