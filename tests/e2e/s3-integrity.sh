#!/bin/bash
# s3-integrity.sh — the integrity suite (integrity.sh) against s3rver behind the signing proxy: replaced shards and edited manifests are caught on S3 too, where the latest may open from its head.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/integrity.sh"
