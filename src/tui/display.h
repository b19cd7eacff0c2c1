/* display.h — the one module that talks to ncurses: a cell buffer views draw into, flushed to the terminal or kept for headless tests. */
#ifndef MT_TUI_DISPLAY_H
#define MT_TUI_DISPLAY_H

#include <stddef.h>

/* What a piece of text is, not its colour: the scheme maps roles to
 * colours, or to bold/reverse when monochrome (NO_COLOR, or no colours). */
enum disp_role {
	R_NORMAL,
	R_TITLE,    /* the breadcrumb line */
	R_HEADER,   /* column headers */
	R_SELECTED, /* the cursor row */
	R_STATUS,   /* the status line */
	R_ERROR,    /* errors in the status line and dialogs */
	R_KEY,      /* a key in the footer */
	R_FOOTER,
	R_OFFLINE,  /* an unreachable remote, a damaged shard */
	R_GOOD,     /* online, verified */
	R_DIM,      /* secondary text */
	R_WARN,     /* damaged but repairable */
	R_NROLES
};

/* Keys: Unicode code points as themselves, ncurses' function keys
 * (KEY_UP, KEY_RESIZE, ...) tagged with DISP_FN so the two never collide. */
#define DISP_FN 0x40000000
#define DISP_CTRL(c) ((c) & 0x1f)

/* Open the terminal (ncursesw; colours unless mono); 0, or -1 when curses cannot
 * start.  This module stays below the library's codes (it only wraps ncurses):
 * its -1 results are "no", and callers turn them into an MT_E code. */
int disp_open_tty(int mono);
/* A w x h screen in memory only, for tests. */
void disp_open_headless(int w, int h);
void disp_close(void);
/* Headless: change the size (as a terminal resize would). */
void disp_resize(int w, int h);
int disp_width(void);
int disp_height(void);

/* Blank the buffer. */
void disp_clear(void);
/* Write UTF-8 text at (y, x) in at most maxw columns (cut at the edge);
 * returns the columns used. */
int disp_text(int y, int x, int maxw, int role, const char *utf8);
/* Paint w columns from (y, x) with spaces in role. */
void disp_fill(int y, int x, int w, int role);
/* Put one character (a code point) with a grey level 0..255 as colour
 * where colours allow it (image previews). */
void disp_cell_grey(int y, int x, unsigned ch, int grey);
/* Columns UTF-8 text takes on screen. */
int disp_columns(const char *utf8);

/* Show the buffer (a tty: only what changed); Ctrl-L's full repaint when
 * `full`.  Headless: nothing. */
void disp_flush(int full);
/* The next key within timeout_ms (DISP_NONE: none yet; DISP_EOF: the terminal
 * is gone, end of input or a read error, and no key will come).  Terminal only. */
#define DISP_NONE (-1)
#define DISP_EOF (-2)
int disp_key(int timeout_ms);

/* After a DISP_FN | KEY_MOUSE key: where, and what happened; 0, or -1
 * when the event is none of these. */
enum { MOUSE_CLICK = 1, MOUSE_DOUBLE, MOUSE_WHEEL_UP, MOUSE_WHEEL_DOWN };
int disp_mouse(int *y, int *x, int *what);

/* The screen as text lines (trailing blanks cut), malloc'ed. */
char *disp_dump(void);

#endif
