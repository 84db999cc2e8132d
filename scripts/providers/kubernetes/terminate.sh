#!/bin/sh
# terminate.sh POD: deletes the pod without waiting (Kubernetes sends SIGTERM: the node leaves
# the cluster, then the pod goes). A pod already gone is fine.
# Settings: CUMULUS_K8S_NAMESPACE (default: default), KUBECTL (default kubectl).
set -eu
ns=${CUMULUS_K8S_NAMESPACE:-default}
kubectl=${KUBECTL:-kubectl}
"$kubectl" -n "$ns" delete pod "$1" --wait=false --ignore-not-found >/dev/null
