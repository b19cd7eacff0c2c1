#!/bin/bash
# s3-errors.sh — the bad-input and damaged-store suite (cli-errors.sh) against s3rver behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/cli-errors.sh"
