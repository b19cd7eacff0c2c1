#!/bin/bash
# submit.sh — build DATASET from RECIPE on a Slurm cluster: an array job of N parts, then one commit.
# Usage: MATORAGE_STORE=s3://bucket/prefix examples/slurm/submit.sh RECIPE DATASET N [KEY=VALUE ...]
# Optional, from the environment: PART_CPUS and PART_MEM (each part's --cpus-per-task and
# --mem; Slurm's defaults otherwise), PART_MAX (at most this many parts running at once);
# sbatch itself reads SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_QOS and SBATCH_TIMELIMIT.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
[ $# -ge 3 ] || { echo "usage: submit.sh RECIPE DATASET N [KEY=VALUE ...]" >&2; exit 2; }
n=$3
case $n in '' | *[!0-9]* | 0*) echo "submit.sh: N must be a number of parts from 1, not '$n'" >&2; exit 2 ;; esac
: "${MATORAGE_STORE:?set MATORAGE_STORE, e.g. s3://bucket/prefix}"
# Slurm runs a copy of each batch script from its spool directory, in the directory sbatch
# was called from: the tasks get the recipe's absolute path.
recipe=$1
[ -f "$recipe" ] && recipe=$(cd "$(dirname "$recipe")" && pwd)/$(basename "$recipe")
export RECIPE=$recipe DATASET=$2 RECIPE_ARGS="${*:4}" MATORAGE_STORE
res=()
[ -z "${PART_CPUS:-}" ] || res+=(--cpus-per-task="$PART_CPUS")
[ -z "${PART_MEM:-}" ] || res+=(--mem="$PART_MEM")
# --export=ALL hands RECIPE, DATASET, RECIPE_ARGS, the store and PATH to every task.
parts=$(sbatch --parsable --export=ALL --array="0-$((n - 1))${PART_MAX:+%$PART_MAX}" \
	"${res[@]}" "$here/part.sbatch")
parts=${parts%%;*}
# afterok on an array job waits for all its tasks. Once one failed the dependency can never
# be met: --kill-on-invalid-dep cancels the commit job then, where Slurm would otherwise
# leave it pending for ever (reason DependencyNeverSatisfied).
commit=$(sbatch --parsable --export=ALL,PARTS_JOB="$parts" --dependency="afterok:$parts" \
	--kill-on-invalid-dep=yes "$here/commit.sbatch")
commit=${commit%%;*}
echo "parts: job $parts ($n tasks); commit: job $commit, once every part succeeded"
