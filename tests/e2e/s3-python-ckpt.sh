#!/bin/bash
# s3-python-ckpt.sh — checkpoints from Python (python-ckpt.sh) on S3 behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/python-ckpt.sh"
