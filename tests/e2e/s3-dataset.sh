#!/bin/bash
# s3-dataset.sh — the dataset round-trip suite (cli-roundtrip.sh) against s3rver, every request signature-checked by the proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/cli-roundtrip.sh"
