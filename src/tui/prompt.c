/* prompt.c — the browser's line editor: cursor movement, readline's kill keys, per-kind history, Tab completion, and a change callback for what applies as one types. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <ncursesw/curses.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

#define HISTORY_MAX 100

void tui_ask(struct tui *t, const char *label, const char *initial,
	     void (*submit)(struct tui *t, const char *text, void *arg), void *arg,
	     void (*free_arg)(void *arg))
{
	if (t->prompt.free_arg)
		t->prompt.free_arg(t->prompt.arg);
	t->prompt = (struct tui_prompt){ .active = 1, .submit = submit, .arg = arg,
					 .free_arg = free_arg, .hpos = -1 };
	snprintf(t->prompt.label, sizeof t->prompt.label, "%s", label);
	snprintf(t->prompt.text, sizeof t->prompt.text, "%s", initial ? initial : "");
	t->prompt.cur = strlen(t->prompt.text);
	/* A default shows selected: Enter takes it, typing replaces it, and a
	 * key that moves or edits keeps it for changing. */
	t->prompt.selected = t->prompt.text[0] != '\0';
	t->dirty = 1;
}

void tui_words_add(struct tui_words *w, const char *s)
{
	for (size_t i = 0; i < w->n; i++)
		if (!strcmp(w->v[i], s))
			return;
	if (w->n == w->cap)
		w->v = app_xreallocarray(w->v, w->cap = w->cap ? 2 * w->cap : 16, sizeof *w->v);
	w->v[w->n++] = app_xstrdup(s);
}

void tui_words_free(struct tui_words *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->v[i]);
	free(w->v);
	*w = (struct tui_words){ 0 };
}

/* ---- history: one list per kind of prompt, newest last ---- */

static void history_add(struct tui *t, int kind, const char *text)
{
	struct tui_words *h = &t->history[kind];
	if (!*text || (h->n && !strcmp(h->v[h->n - 1], text)))
		return;
	if (h->n == HISTORY_MAX) {
		free(h->v[0]);
		memmove(h->v, h->v + 1, (h->n - 1) * sizeof *h->v);
		h->n--;
	}
	if (h->n == h->cap)
		h->v = app_xreallocarray(h->v, h->cap = h->cap ? 2 * h->cap : 16, sizeof *h->v);
	h->v[h->n++] = app_xstrdup(text);
}

static void prompt_set(struct tui_prompt *p, const char *text)
{
	snprintf(p->text, sizeof p->text, "%s", text);
	p->cur = strlen(p->text);
}

/* Up (dir -1) and Down (+1) through the history; past the newest entry is
 * what was being typed before Up. */
static void history_move(struct tui *t, int dir)
{
	struct tui_prompt *p = &t->prompt;
	const struct tui_words *h = &t->history[p->hist];
	if (!h->n)
		return;
	if (p->hpos < 0) {
		if (dir > 0)
			return;
		snprintf(p->saved, sizeof p->saved, "%s", p->text);
		p->hpos = (int)h->n;
	}
	int to = p->hpos + dir;
	if (to < 0)
		return;
	if (to >= (int)h->n) {
		p->hpos = -1;
		prompt_set(p, p->saved);
		return;
	}
	p->hpos = to;
	prompt_set(p, h->v[to]);
}

void tui_history_free(struct tui *t)
{
	for (int i = 0; i < TUI_HIST_N; i++)
		tui_words_free(&t->history[i]);
}

/* ---- editing ---- */

static int cont_byte(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

static size_t char_left(const char *s, size_t i)
{
	while (i > 0 && cont_byte(s[--i]))
		;
	return i;
}

static size_t char_right(const char *s, size_t i)
{
	if (!s[i])
		return i;
	i++;
	while (s[i] && cont_byte(s[i]))
		i++;
	return i;
}

/* Remove bytes [a, b) of the text; the cursor goes to a. */
static void cut(struct tui_prompt *p, size_t a, size_t b)
{
	memmove(p->text + a, p->text + b, strlen(p->text + b) + 1);
	p->cur = a;
}

static void insert(struct tui_prompt *p, const char *s)
{
	size_t len = strlen(p->text), n = strlen(s);
	if (len + n >= sizeof p->text)
		return;
	memmove(p->text + p->cur + n, p->text + p->cur, len - p->cur + 1);
	memcpy(p->text + p->cur, s, n);
	p->cur += n;
}

static void insert_code_point(struct tui_prompt *p, unsigned u)
{
	char mb[5] = { 0 };
	if (u < 0x80) {
		mb[0] = (char)u;
	} else if (u < 0x800) {
		mb[0] = (char)(0xc0 | u >> 6);
		mb[1] = (char)(0x80 | (u & 0x3f));
	} else if (u < 0x10000) {
		mb[0] = (char)(0xe0 | u >> 12);
		mb[1] = (char)(0x80 | (u >> 6 & 0x3f));
		mb[2] = (char)(0x80 | (u & 0x3f));
	} else {
		mb[0] = (char)(0xf0 | u >> 18);
		mb[1] = (char)(0x80 | (u >> 12 & 0x3f));
		mb[2] = (char)(0x80 | (u >> 6 & 0x3f));
		mb[3] = (char)(0x80 | (u & 0x3f));
	}
	insert(p, mb);
}

/* Ctrl-W: the word before the cursor and the blanks after it, as in a shell. */
static void kill_word(struct tui_prompt *p)
{
	size_t a = p->cur;
	while (a > 0 && p->text[a - 1] == ' ')
		a--;
	while (a > 0 && p->text[a - 1] != ' ')
		a--;
	cut(p, a, p->cur);
}

/* ---- completion ---- */

/* Tab: the word before the cursor grows to what every candidate shares; a
 * single candidate is taken whole (with a blank after it unless it is a
 * directory), several are listed on the hint line. */
static void complete(struct tui *t)
{
	struct tui_prompt *p = &t->prompt;
	if (!p->complete)
		return;
	char before[sizeof p->text];
	snprintf(before, sizeof before, "%.*s", (int)p->cur, p->text);
	size_t ws = p->cur;
	while (ws > 0 && before[ws - 1] != ' ')
		ws--;
	const char *word = before + ws;
	struct tui_words all = { 0 }, match = { 0 };
	p->complete(t, before, &all, p->arg);
	for (size_t i = 0; i < all.n; i++)
		if (!strncmp(all.v[i], word, strlen(word)))
			tui_words_add(&match, all.v[i]);
	tui_words_free(&all);
	p->hint[0] = '\0';
	if (!match.n) {
		snprintf(p->hint, sizeof p->hint, "no completion for '%s'", word);
		return;
	}
	size_t common = strlen(match.v[0]);
	for (size_t i = 1; i < match.n; i++) {
		size_t k = 0;
		while (k < common && match.v[i][k] == match.v[0][k])
			k++;
		common = k;
	}
	char grown[sizeof p->text];
	snprintf(grown, sizeof grown, "%.*s", (int)common, match.v[0]);
	if (match.n == 1 && grown[0] && grown[strlen(grown) - 1] != '/')
		strcat(grown, " ");
	cut(p, ws, p->cur);
	insert(p, grown);
	for (size_t i = 0, at = 0; match.n > 1 && i < match.n && at < sizeof p->hint; i++)
		at += (size_t)snprintf(p->hint + at, sizeof p->hint - at, "%s%s", i ? "  " : "",
				       match.v[i]);
	tui_words_free(&match);
}

/* ---- keys ---- */

static void prompt_end(struct tui *t, int submit)
{
	struct tui_prompt p = t->prompt;
	t->prompt = (struct tui_prompt){ 0 };
	t->dirty = 1;
	if (submit)
		history_add(t, p.hist, p.text);
	else if (p.change)
		p.change(t, NULL, p.arg);
	/* A submit callback owns arg from then on (a job may keep it). */
	if (submit && p.submit)
		p.submit(t, p.text, p.arg);
	else if (p.free_arg)
		p.free_arg(p.arg);
}

/* Keys that move the cursor; 1 when k was one of them. */
static int prompt_move(struct tui_prompt *p, int k)
{
	if (k == (DISP_FN | KEY_LEFT) || k == DISP_CTRL('b'))
		p->cur = char_left(p->text, p->cur);
	else if (k == (DISP_FN | KEY_RIGHT) || k == DISP_CTRL('f'))
		p->cur = char_right(p->text, p->cur);
	else if (k == (DISP_FN | KEY_HOME) || k == DISP_CTRL('a'))
		p->cur = 0;
	else if (k == (DISP_FN | KEY_END) || k == DISP_CTRL('e'))
		p->cur = strlen(p->text);
	else
		return 0;
	return 1;
}

/* Keys that change the text; 1 when k was one of them. */
static int prompt_edit(struct tui_prompt *p, int k)
{
	if (k == 127 || k == 8 || k == (DISP_FN | KEY_BACKSPACE))
		cut(p, char_left(p->text, p->cur), p->cur);
	else if (k == (DISP_FN | KEY_DC) || k == DISP_CTRL('d'))
		cut(p, p->cur, char_right(p->text, p->cur));
	else if (k == DISP_CTRL('u'))
		cut(p, 0, p->cur);
	else if (k == DISP_CTRL('k'))
		p->text[p->cur] = '\0';
	else if (k == DISP_CTRL('w'))
		kill_word(p);
	else if (k >= 0x20 && !(k & DISP_FN) && k != 0x7f && k < 0x110000)
		insert_code_point(p, (unsigned)k);
	else
		return 0;
	return 1;
}

/* The first key on a selected default: a character replaces it, an erasing
 * key erases it (returns 1: the key is used up), any other keeps it. */
static int unselect(struct tui_prompt *p, int k)
{
	p->selected = 0;
	int typed = k >= 0x20 && !(k & DISP_FN) && k != 0x7f && k < 0x110000;
	int erase = k == 127 || k == 8 || k == (DISP_FN | KEY_BACKSPACE) || k == (DISP_FN | KEY_DC);
	if (typed || erase)
		cut(p, 0, strlen(p->text));
	return erase;
}

void tui_prompt_key(struct tui *t, int k)
{
	struct tui_prompt *p = &t->prompt;
	t->dirty = 1;
	if (k == 27) {
		prompt_end(t, 0);
		return;
	}
	if (k == '\n' || k == '\r' || k == (DISP_FN | KEY_ENTER)) {
		prompt_end(t, 1);
		return;
	}
	if (p->selected && unselect(p, k)) {
		/* the selection erased: nothing more to do with the key */
	} else if (k == '\t') {
		complete(t);
	} else if (k == (DISP_FN | KEY_UP) || k == (DISP_FN | KEY_DOWN)) {
		history_move(t, k == (DISP_FN | KEY_UP) ? -1 : 1);
	} else if (prompt_move(p, k)) {
		return;
	} else if (!prompt_edit(p, k)) {
		return;
	}
	if (k != '\t')
		p->hint[0] = '\0';
	if (p->change)
		p->change(t, p->text, p->arg);
}

/* The prompt on line y: its label, the text scrolled so the cursor shows,
 * the cursor as a reversed cell. */
void tui_prompt_draw(struct tui *t, int y)
{
	const struct tui_prompt *p = &t->prompt;
	int w = disp_width();
	disp_fill(y, 0, w, R_NORMAL);
	int x = tui_text_cut(y, 0, w > 24 ? w - 12 : w / 2, R_STATUS, p->label);
	char head[sizeof p->text];
	snprintf(head, sizeof head, "%.*s", (int)p->cur, p->text);
	const char *shown = head;
	/* Keep the cursor in view: drop characters from the front. */
	while (*shown && disp_columns(shown) > w - x - 2) {
		shown++;
		while (cont_byte(*shown))
			shown++;
	}
	x += disp_text(y, x, w - x, p->selected ? R_SELECTED : R_NORMAL, shown);
	const char *at = p->text + p->cur;
	char under[8] = " ";
	if (*at)
		snprintf(under, sizeof under, "%.*s", (int)(char_right(at, 0)), at);
	x += disp_text(y, x, 1, R_SELECTED, under);
	if (*at)
		disp_text(y, x, w - x, R_NORMAL, at + strlen(under));
}

/* While the prompt is open the footer shows its candidates or its keys. */
void tui_prompt_footer(struct tui *t, int y)
{
	const struct tui_prompt *p = &t->prompt;
	int w = disp_width();
	disp_fill(y, 0, w, R_FOOTER);
	if (p->hint[0]) {
		tui_text_cut(y, 0, w, R_DIM, p->hint);
		return;
	}
	tui_text_cut(y, 0, w, R_FOOTER,
		     p->complete ? "Enter ok  Esc cancel  Tab complete  Up/Down history  "
				   "^A/^E ends  ^W word  ^U line"
				 : "Enter ok  Esc cancel  Up/Down history  ^A/^E ends  ^W word  "
				   "^U line");
}
