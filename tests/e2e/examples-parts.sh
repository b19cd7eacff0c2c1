#!/bin/bash
# examples-parts.sh — the shell of the Slurm array-job example and the commands of the Kubernetes Indexed Job example, run here against a file store: N parts staged at once, one commit, exactly the whole run's rows.
. "$(dirname "$0")/lib.sh"
M=$MATORAGE
EX=$(cd "$top_srcdir/examples" && pwd)
cd "$WORK" || exit 1
# The examples call `matorage` by name, as on a cluster node.
mkdir -p bin
printf '#!/bin/sh\nexec %s "$@"\n' "$M" > bin/matorage
chmod +x bin/matorage
export PATH="$WORK/bin:$PATH"

# same A B: two versions hold the same rows of x and y.
same() {
	for a in x y; do
		$M get "$1" $a -o "$WORK/a.npy" > /dev/null && $M get "$2" $a -o "$WORK/b.npy" > /dev/null &&
			cmp -s "$WORK/a.npy" "$WORK/b.npy" || return 1
	done
}
check "the recipe run whole" $M run "$EX/parts/rows.lua" name=whole rows=1000

# ---- Slurm: three array tasks (indices 4..6) at once, then the commit job ----
pids=()
for id in 4 5 6; do
	env SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=$id SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 \
		RECIPE="$EX/parts/rows.lua" DATASET=slurm RECIPE_ARGS=rows=1000 \
		bash "$EX/slurm/part.sbatch" > "part-$id.out" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
ok $rc "slurm: the three array tasks stage their parts"
ok $(grep -qx "slurm@staged/slurm-4242/3" part-6.out; echo $?) "slurm: task 6 of 4..6 is part 3/3 of staging slurm-4242"
check "slurm: the commit job merges them" env DATASET=slurm PARTS_JOB=4242 bash "$EX/slurm/commit.sbatch"
check "slurm: the version holds exactly the whole run's rows, in order" same whole slurm
fails "slurm: a task outside an array job is refused" 1 "array job" \
	env -u SLURM_ARRAY_TASK_COUNT SLURM_ARRAY_JOB_ID=1 SLURM_ARRAY_TASK_ID=0 RECIPE=x DATASET=y \
	bash "$EX/slurm/part.sbatch"
check "slurm: submit.sh is valid bash" bash -n "$EX/slurm/submit.sh"

# ---- Kubernetes: each pod's command with its JOB_COMPLETION_INDEX, then the commit Job's ----
if ! $PY -c 'import yaml' 2> /dev/null; then
	ok 0 "k8s # SKIP python3-yaml not installed"
	done_testing
	exit
fi
part_cmd=$($PY -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]["args"][0])' "$EX/k8s/parts-job.yaml")
commit_cmd=$($PY -c 'import sys, yaml; print(" ".join(yaml.safe_load(open(sys.argv[1]))["spec"]["template"]["spec"]["containers"][0]["command"]))' "$EX/k8s/commit-job.yaml")
ok $([ -n "$part_cmd" ] && [ -n "$commit_cmd" ]; echo $?) "k8s: the pod and commit commands read from the Job files"
# Here: the recipe from the examples, 1000 rows, 3 parts, dataset "features" as in the Job.
part_cmd=${part_cmd//\/recipe\/recipe.lua/$EX/parts/rows.lua}
part_cmd=${part_cmd//rows=1000000/rows=1000}
pids=()
for i in 0 1 2; do
	env JOB_COMPLETION_INDEX=$i PARTS=3 JOB_UID=0f1e DATASET=features sh -c "$part_cmd" > "pod-$i.out" 2>&1 &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
ok $rc "k8s: three indexed pods stage their parts"
check "k8s: the commit Job's command merges them" sh -c "${commit_cmd//PARTS_UID/0f1e}"
check "k8s: the version holds exactly the whole run's rows, in order" same whole features
done_testing
