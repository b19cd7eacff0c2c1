#!/bin/bash
# s3-repair-campaign.sh — the repair fault campaign (repair-campaign.sh) on S3 behind the fault proxy.
MT_TEST_STORE=s3 exec bash "$(dirname "$0")/repair-campaign.sh"
