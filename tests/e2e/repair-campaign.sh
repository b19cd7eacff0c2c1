#!/bin/bash
# repair-campaign.sh — seeded fault campaign (repair_campaign.py): random protected versions and damage; repair gives back byte-identical objects, names what it cannot, and --salvage keeps exactly the intact chunks' rows.
# MT_SEED=N runs another campaign (the seed is printed); MT_CAMPAIGN_SECONDS bounds it (default 40).
# With MT_TEST_STORE=s3 (s3-repair-campaign.sh) the store is S3 behind the fault proxy, with 503s and drops during repairs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
[ "$OBJ_MODE" = s3 ] && : "${MT_CAMPAIGN_SECONDS:=30}"
export MT_CAMPAIGN_SECONDS
export MATORAGE_CONFIG="$WORK/conf/matorage.json"
"$PY" "$top_srcdir/tests/e2e/repair_campaign.py" "$MATORAGE" "$WORK" "$OBJ_MODE"
