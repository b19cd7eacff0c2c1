#!/bin/bash
# repair-campaign.sh — seeded fault campaign (repair_campaign.py): random protected versions and damage; repair gives back byte-identical objects, names what it cannot, and --salvage keeps exactly the intact chunks' rows.
# MT_SEED=N runs another campaign (the seed is printed); MT_CAMPAIGN_ROUNDS=N sets its rounds (6 on
# files, 4 on S3), or MT_CAMPAIGN_SECONDS=S runs rounds for S seconds instead.
# With MT_TEST_STORE=s3 (s3-repair-campaign.sh) the store is S3 behind the fault proxy, with 503s and drops during repairs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/store.sh"
use_store
export MATORAGE_CONFIG="$WORK/conf/matorage.json"
"$PY" "$top_srcdir/tests/e2e/repair_campaign.py" "$MATORAGE" "$WORK" "$OBJ_MODE"
rc=$?
echo "# elapsed ${SECONDS} s"
exit $rc
