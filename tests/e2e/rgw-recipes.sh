#!/bin/bash
# rgw-recipes.sh — the Lua recipe suite (lua-recipes.sh) against Ceph RADOS Gateway behind the signing proxy.
S3_TARGET=rgw MT_TEST_STORE=s3 exec bash "$(dirname "$0")/lua-recipes.sh"
