#!/bin/bash
# s3-tui-fragments-remote.sh — the browser's fragment repair from parity and from a mirror remote (tui-fragments-remote.sh) on s3rver behind the signing proxy, the mirror another S3 prefix, the fragment objects deleted with awscli.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/tui-fragments-remote.sh"
