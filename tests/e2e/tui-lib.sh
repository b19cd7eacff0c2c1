# tui-lib.sh — helpers for the browser's tmux tests: start it in a private tmux server, read the screen, send keys.
# Sourced after lib.sh; skips the whole test when tmux is missing.
if ! command -v tmux > /dev/null; then
	echo "1..0 # SKIP tmux not installed (scripts/install-deps.sh)"
	exit 0
fi
# A tmux server per browser started: a new session on a server still shutting down
# after kill-server fails ("server exited unexpectedly").
TUI_N=0
SOCK="$WORK/tmux.0.sock"
tmx() { tmux -S "$SOCK" -f /dev/null "$@"; }
TUI_PIDS=()
tui_cleanup() {
	for s in "$WORK"/tmux.*.sock; do tmux -S "$s" kill-server 2> /dev/null; done
	for p in "${TUI_PIDS[@]}"; do kill "$p" 2> /dev/null; done
	mt_cleanup
}
trap tui_cleanup EXIT

# tui_start W H [ARGS...]: the browser in session mt, W x H, in $WORK, with the test's
# environment; its exit status lands in $WORK/exit.
tui_start() {
	local w=$1 h=$2
	shift 2
	rm -f "$WORK/exit"
	TUI_N=$((TUI_N + 1))
	SOCK="$WORK/tmux.$TUI_N.sock"
	tmx new-session -d -s mt -x "$w" -y "$h" -c "$WORK" \
		"env MATORAGE_STORE='$MATORAGE_STORE' XDG_DATA_HOME='$XDG_DATA_HOME' MATORAGE_CONFIG='$MATORAGE_CONFIG' TERM=tmux-256color $MATORAGE $* 2> '$WORK/stderr'; echo exited \$? > '$WORK/exit'; sleep 60"
}
# screen: what the terminal shows now.
screen() { tmx capture-pane -p -t mt; }
# until_screen SECONDS CMD...: until CMD, given the screen on its input, succeeds (at most
# SECONDS); 1 when it never did.
until_screen() {
	local n=$(($1 * 10)) i
	shift
	for i in $(seq $n); do
		screen | "$@" && return 0
		sleep 0.1
	done
	return 1
}
# screen_case NAME RC: a case passing when RC is 0, with the screen shown when it failed.
screen_case() {
	ok "$2" "$1"
	[ "$2" -eq 0 ] || screen | sed 's/^/# | /'
}
# Filters for until_screen: the screen shows TEXT; does not; has a line matching REGEX; shows
# TEXT with its lines joined and spaces left out (a view wraps a long line at the screen's
# edge, and a space there is lost).
shows() { grep -qF -- "$1"; }
lacks() { ! grep -qF -- "$1"; }
matches() { grep -Eq -- "$1"; }
shows_whole() { tr -d '\n ' | grep -qF -- "${1// /}"; }
# wait_for TEXT [SECONDS]: until the screen shows TEXT (at most 20 s by default).
wait_for() { until_screen "${2:-20}" shows "$1"; }
# expect NAME TEXT: a case that passes when the screen shows TEXT in time.
expect() { wait_for "$2"; screen_case "$1" $?; }
# expect_not NAME TEXT: a case that passes when the screen does not show TEXT.
expect_not() { screen | lacks "$2"; screen_case "$1" $?; }
# expect_gone NAME TEXT: a case that passes when the screen stops showing TEXT in time.
expect_gone() { until_screen 20 lacks "$2"; screen_case "$1" $?; }
# expect_re NAME REGEX [SECONDS]: a case that passes when a line of the screen matches REGEX
# in time (20 s by default; a row, column by column).
expect_re() { until_screen "${3:-20}" matches "$2"; screen_case "$1" $?; }
# expect_whole NAME TEXT: a case that passes when the screen shows TEXT in time, wrapped or not.
expect_whole() { until_screen 20 shows_whole "$2"; screen_case "$1" $?; }
keys() { tmx send-keys -t mt "$@"; }
# tui_synced STORE...: the browser's start-up syncs of these stores (local, a remote's name) have
# ended, as its jobs list says (each a case): a status line of theirs cannot replace a later
# key's.  Back to the view it was on.
tui_synced() {
	local s
	keys J
	for s in "$@"; do
		expect_re "the start-up sync of $s ends" "^ *[0-9]+ +sync +done .* sync $s *\$"
	done
	keys Escape
}
# tui_exited: until the browser has exited (at most 10 s); 0 when it exited with 0.
tui_exited() {
	for _ in $(seq 100); do [ -s "$WORK/exit" ] && break; sleep 0.1; done
	grep -q 'exited 0' "$WORK/exit" 2> /dev/null
}
