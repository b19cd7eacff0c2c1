#!/bin/bash
# s3-heal.sh — self-healing reads (heal.sh) against s3rver behind the signing proxy, with a chunk corrupted once in transit that must be read again rather than rebuilt.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/heal.sh"
