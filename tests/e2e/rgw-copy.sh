#!/bin/bash
# rgw-copy.sh — s3-copy.sh against Ceph RADOS Gateway (one mon, one memstore OSD) behind the same proxy.
S3_TARGET=rgw exec bash "$(dirname "$0")/s3-copy.sh"
