#!/bin/bash
# s3-repair.sh — the repair suite (repair.sh) against s3rver behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/repair.sh"
