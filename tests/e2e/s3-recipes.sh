#!/bin/bash
# s3-recipes.sh — the Lua recipe suite (lua-recipes.sh) against s3rver behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/lua-recipes.sh"
