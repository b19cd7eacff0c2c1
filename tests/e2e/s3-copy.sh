#!/bin/bash
# s3-copy.sh — push, pull and sync (cli-copy.sh) with S3 destinations behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/cli-copy.sh"
