#!/bin/bash
# submit.sh — build DATASET from RECIPE on N nodes of a Slurm cluster: an array job of N parts, then one commit.
# Usage: MATORAGE_STORE=s3://bucket/prefix examples/slurm/submit.sh RECIPE DATASET N [KEY=VALUE ...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: submit.sh RECIPE DATASET N [KEY=VALUE ...]" >&2; exit 2; }
export RECIPE=$1 DATASET=$2 RECIPE_ARGS="${*:4}"
n=$3
: "${MATORAGE_STORE:?set MATORAGE_STORE, e.g. s3://bucket/prefix}"
export MATORAGE_STORE
# --export=ALL hands RECIPE, DATASET, RECIPE_ARGS and the store to every task.
parts=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/part.sbatch")
parts=${parts%%;*}
commit=$(sbatch --parsable --export=ALL,PARTS_JOB="$parts" --dependency="afterok:$parts" \
	"$here/commit.sbatch")
echo "parts: job $parts ($n tasks); commit: job $commit, once every part succeeded"
