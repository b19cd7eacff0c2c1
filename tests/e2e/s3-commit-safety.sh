#!/bin/bash
# s3-commit-safety.sh — the commit and gc safety suite (commit-safety.sh) against s3rver behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/commit-safety.sh"
