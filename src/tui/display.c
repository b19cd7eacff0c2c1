/* display.c — ncurses behind a cell buffer: views draw cells, one flush per loop shows them; headless mode keeps only the buffer. */
#define _XOPEN_SOURCE_EXTENDED 1
#include "config.h"

#include <locale.h>
#include <ncursesw/curses.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "app.h"
#include "display.h"

/* Waits for a key that end at once, in a row, before the input is taken for
 * closed (a signal may cut one or two short on a live terminal). */
#define DISP_EARLY_MAX 50

struct cell {
	wchar_t ch; /* 0: the right half of a wide character */
	unsigned char role;
	short grey; /* -1, or 0..255 */
};

static struct {
	int w, h;
	struct cell *cells;
	int tty, colour, mono;
} D;

static void disp_alloc(int w, int h)
{
	free(D.cells);
	D.w = w > 1 ? w : 1;
	D.h = h > 1 ? h : 1;
	D.cells = app_xcalloc((size_t)D.w * (size_t)D.h, sizeof *D.cells);
	disp_clear();
}

/* Colour pairs: 1.. for roles, GREY_PAIR.. for the 24 greys of xterm-256. */
#define GREY_PAIR 32

static const attr_t mono_attrs[R_NROLES] = {
	[R_TITLE] = A_BOLD,	       [R_HEADER] = A_BOLD | A_UNDERLINE,
	[R_SELECTED] = A_REVERSE,      [R_STATUS] = A_REVERSE,
	[R_ERROR] = A_BOLD | A_REVERSE, [R_KEY] = A_BOLD,
	[R_OFFLINE] = A_BOLD,	       [R_DIM] = A_DIM,
	[R_WARN] = A_UNDERLINE,
};

static void disp_colours(void)
{
	static const short pairs[R_NROLES][2] = {
		[R_NORMAL] = {-1, -1},	     [R_TITLE] = {COLOR_WHITE, COLOR_BLUE},
		[R_HEADER] = {COLOR_GREEN, -1}, [R_SELECTED] = {COLOR_BLACK, COLOR_CYAN},
		[R_STATUS] = {COLOR_BLACK, COLOR_WHITE}, [R_ERROR] = {COLOR_WHITE, COLOR_RED},
		[R_KEY] = {COLOR_BLACK, COLOR_CYAN}, [R_FOOTER] = {-1, -1},
		[R_OFFLINE] = {COLOR_RED, -1}, [R_GOOD] = {COLOR_GREEN, -1},
		[R_DIM] = {-1, -1},	     [R_WARN] = {COLOR_YELLOW, -1},
	};
	start_color();
	use_default_colors();
	for (int r = 0; r < R_NROLES; r++)
		init_pair((short)(r + 1), pairs[r][0], pairs[r][1]);
	if (COLORS >= 256 && COLOR_PAIRS > GREY_PAIR + 24)
		for (short g = 0; g < 24; g++)
			init_pair((short)(GREY_PAIR + g), g < 12 ? 255 : 232, (short)(232 + g));
}

int disp_open_tty(int mono)
{
	setlocale(LC_ALL, "");
	if (!initscr())
		return -1;
	D.tty = 1;
	raw();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	/* Esc must act at once, not wait for an escape sequence. */
	set_escdelay(25);
	/* Clicks and the wheel; Shift still selects text in most terminals. */
	mousemask(BUTTON1_CLICKED | BUTTON1_DOUBLE_CLICKED | BUTTON4_PRESSED | BUTTON5_PRESSED,
		  NULL);
	mouseinterval(200);
	D.mono = mono;
	D.colour = !mono && has_colors();
	if (D.colour)
		disp_colours();
	disp_alloc(COLS, LINES);
	return 0;
}

void disp_open_headless(int w, int h)
{
	/* Wide-character widths need a UTF-8 locale. */
	if (!setlocale(LC_CTYPE, "C.UTF-8"))
		setlocale(LC_CTYPE, "");
	D.tty = 0;
	D.colour = 0;
	disp_alloc(w, h);
}

void disp_close(void)
{
	if (D.tty)
		endwin();
	D.tty = 0;
	free(D.cells);
	D.cells = NULL;
}

void disp_resize(int w, int h)
{
	if (D.tty) {
		/* ncurses has already resized stdscr (KEY_RESIZE). */
		w = COLS;
		h = LINES;
	}
	disp_alloc(w, h);
}

int disp_width(void)
{
	return D.w;
}

int disp_height(void)
{
	return D.h;
}

void disp_clear(void)
{
	for (int i = 0; i < D.w * D.h; i++)
		D.cells[i] = (struct cell){L' ', R_NORMAL, -1};
}

/* The next code point of UTF-8 text; invalid bytes read as U+FFFD. */
static unsigned disp_utf8(const char **s)
{
	const unsigned char *p = (const unsigned char *)*s;
	unsigned c = p[0];
	int n = c < 0x80 ? 0 : c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : -1;
	if (n < 0) {
		(*s)++;
		return 0xfffd;
	}
	c = n == 0 ? c : c & (0x3fu >> n);
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			*s += i;
			return 0xfffd;
		}
		c = c << 6 | (p[i] & 0x3f);
	}
	*s += n + 1;
	return c;
}

static int disp_wcwidth(unsigned c)
{
	/* Control characters would move the terminal's cursor: never print them. */
	if (c < 0x20 || c == 0x7f)
		return -1;
	int w = wcwidth((wchar_t)c);
	return w < 0 ? 1 : w;
}

int disp_columns(const char *utf8)
{
	int n = 0;
	while (*utf8) {
		int w = disp_wcwidth(disp_utf8(&utf8));
		n += w < 0 ? 1 : w;
	}
	return n;
}

int disp_text(int y, int x, int maxw, int role, const char *utf8)
{
	if (y < 0 || y >= D.h || x < 0 || !utf8)
		return 0;
	if (x + maxw > D.w)
		maxw = D.w - x;
	int used = 0;
	while (*utf8 && used < maxw) {
		unsigned c = disp_utf8(&utf8);
		int w = disp_wcwidth(c);
		if (w < 0) {
			c = '?';
			w = 1;
		}
		if (w == 0)
			continue;
		if (used + w > maxw)
			break;
		struct cell *cl = &D.cells[y * D.w + x + used];
		*cl = (struct cell){(wchar_t)c, (unsigned char)role, -1};
		if (w == 2)
			cl[1] = (struct cell){0, (unsigned char)role, -1};
		used += w;
	}
	return used;
}

void disp_fill(int y, int x, int w, int role)
{
	for (int i = 0; y >= 0 && y < D.h && i < w && x + i < D.w; i++)
		if (x + i >= 0)
			D.cells[y * D.w + x + i] = (struct cell){L' ', (unsigned char)role, -1};
}

void disp_cell_grey(int y, int x, unsigned ch, int grey)
{
	if (y < 0 || y >= D.h || x < 0 || x >= D.w)
		return;
	D.cells[y * D.w + x] = (struct cell){(wchar_t)ch, R_NORMAL,
					     (short)(grey < 0 ? 0 : grey > 255 ? 255 : grey)};
}

static void disp_attr(const struct cell *c)
{
	if (D.colour && c->grey >= 0 && COLORS >= 256)
		attrset(COLOR_PAIR(GREY_PAIR + c->grey * 24 / 256));
	else if (D.colour)
		attrset(COLOR_PAIR(c->role + 1) | (c->role == R_TITLE || c->role == R_ERROR ||
							   c->role == R_OFFLINE ? A_BOLD
										: c->role == R_DIM ? A_DIM : 0));
	else
		attrset(mono_attrs[c->role]);
}

void disp_flush(int full)
{
	if (!D.tty)
		return;
	if (full)
		clearok(curscr, TRUE);
	wchar_t run[1024];
	for (int y = 0; y < D.h && y < LINES; y++) {
		int x = 0;
		while (x < D.w && x < COLS) {
			const struct cell *first = &D.cells[y * D.w + x];
			int n = 0, x0 = x;
			while (x < D.w && x < COLS && n < 1023) {
				const struct cell *c = &D.cells[y * D.w + x];
				if (c->role != first->role || c->grey != first->grey)
					break;
				if (c->ch)
					run[n++] = c->ch;
				x++;
			}
			run[n] = 0;
			disp_attr(first);
			/* The last cell of the screen cannot be written without scrolling
			 * on some terminals; ncurses copes, errors are not ours to show. */
			mvaddnwstr(y, x0, run, n);
		}
	}
	attrset(A_NORMAL);
	refresh();
}

static int64_t disp_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Whether the terminal is gone: its descriptor hung up or failed. */
static int disp_input_gone(void)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	return poll(&p, 1, 0) < 0 || (p.revents & (POLLHUP | POLLERR | POLLNVAL));
}

int disp_key(int timeout_ms)
{
	/* ncurses says ERR both for "no key in time" and for end of input or a
	 * read error; only the latter comes back at once, again and again. */
	static int early;
	wint_t ch;
	timeout(timeout_ms);
	int64_t t0 = disp_now_ms();
	int r = get_wch(&ch);
	if (r == KEY_CODE_YES || r == OK) {
		early = 0;
		return r == OK ? (int)ch : DISP_FN | (int)ch;
	}
	if (timeout_ms <= 0 || disp_now_ms() - t0 >= timeout_ms / 2) {
		early = 0;
		return DISP_NONE;
	}
	if (disp_input_gone() || ++early >= DISP_EARLY_MAX)
		return DISP_EOF;
	return DISP_NONE;
}

int disp_mouse(int *y, int *x, int *what)
{
	MEVENT ev;
	if (!D.tty || getmouse(&ev) != OK)
		return -1;
	*y = ev.y;
	*x = ev.x;
	if (ev.bstate & BUTTON1_DOUBLE_CLICKED)
		*what = MOUSE_DOUBLE;
	else if (ev.bstate & BUTTON1_CLICKED)
		*what = MOUSE_CLICK;
	else if (ev.bstate & BUTTON4_PRESSED)
		*what = MOUSE_WHEEL_UP;
	else if (ev.bstate & BUTTON5_PRESSED)
		*what = MOUSE_WHEEL_DOWN;
	else
		return -1;
	return 0;
}

char *disp_dump(void)
{
	size_t cap = (size_t)D.h * ((size_t)D.w * 4 + 1) + 1, n = 0;
	char *out = app_xmalloc(cap);
	for (int y = 0; y < D.h; y++) {
		size_t keep = n;
		for (int x = 0; x < D.w; x++) {
			wchar_t c = D.cells[y * D.w + x].ch;
			if (!c)
				continue;
			char mb[8];
			int k = 0;
			unsigned u = (unsigned)c;
			if (u < 0x80) {
				mb[k++] = (char)u;
			} else if (u < 0x800) {
				mb[k++] = (char)(0xc0 | u >> 6);
				mb[k++] = (char)(0x80 | (u & 0x3f));
			} else if (u < 0x10000) {
				mb[k++] = (char)(0xe0 | u >> 12);
				mb[k++] = (char)(0x80 | (u >> 6 & 0x3f));
				mb[k++] = (char)(0x80 | (u & 0x3f));
			} else {
				mb[k++] = (char)(0xf0 | u >> 18);
				mb[k++] = (char)(0x80 | (u >> 12 & 0x3f));
				mb[k++] = (char)(0x80 | (u >> 6 & 0x3f));
				mb[k++] = (char)(0x80 | (u & 0x3f));
			}
			memcpy(out + n, mb, (size_t)k);
			n += (size_t)k;
			if (u != ' ')
				keep = n;
		}
		n = keep;
		out[n++] = '\n';
	}
	out[n] = '\0';
	return out;
}
