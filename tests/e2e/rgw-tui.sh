#!/bin/bash
# rgw-tui.sh — the browser suite (tui-tmux.sh) against Ceph RADOS Gateway behind the signing proxy, with a job canceled while the server is slow.
S3_TARGET=rgw MT_TEST_STORE=s3 exec bash "$(dirname "$0")/tui-tmux.sh"
