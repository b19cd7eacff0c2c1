#!/bin/bash
# s3-stats.sh — the statistics suite (cli-stats.sh) against s3rver behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/cli-stats.sh"
