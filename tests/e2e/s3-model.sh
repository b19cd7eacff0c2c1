#!/bin/bash
# s3-model.sh — model checkpoints through the command (cli-model.sh) on S3 behind the signing proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/cli-model.sh"
