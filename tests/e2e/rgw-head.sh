#!/bin/bash
# rgw-head.sh — s3-head.sh against Ceph RADOS Gateway (one mon, one memstore OSD) behind the same proxy: its ETags decide whether a head is the newest manifest.
S3_TARGET=rgw exec bash "$(dirname "$0")/s3-head.sh"
