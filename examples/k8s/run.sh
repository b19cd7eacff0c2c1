#!/bin/bash
# run.sh — the parts Job, then (once all its pods succeeded) the commit Job; kubectl's current context and namespace.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
kubectl delete job matorage-parts matorage-commit --ignore-not-found
kubectl apply -f "$here/parts-job.yaml"
uid=$(kubectl get job matorage-parts -o jsonpath='{.metadata.uid}')
# A failed part fails the Job: then no commit is made, and the staged parts stay for gc.
kubectl wait --for=condition=complete --timeout=24h job/matorage-parts
sed "s/PARTS_UID/$uid/" "$here/commit-job.yaml" | kubectl apply -f -
kubectl wait --for=condition=complete --timeout=1h job/matorage-commit
kubectl logs job/matorage-commit
