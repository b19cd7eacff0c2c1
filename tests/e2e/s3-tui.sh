#!/bin/bash
# s3-tui.sh — the browser suite (tui-tmux.sh) against s3rver behind the signing proxy, with a job canceled while the server is slow.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/tui-tmux.sh"
