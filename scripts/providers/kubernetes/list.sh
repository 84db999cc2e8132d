#!/bin/sh
# list.sh: prints "POD STATE - TYPE" for each pod of this cluster (CUMULUS_CLUSTER), the command
# provider's list contract. Pod phases: Pending -> pending, Running -> running (also while it
# is being deleted), Succeeded -> terminated, Failed -> failed, Unknown -> pending.
# Settings: CUMULUS_K8S_NAMESPACE (default: default), KUBECTL (default kubectl).
set -eu
ns=${CUMULUS_K8S_NAMESPACE:-default}
kubectl=${KUBECTL:-kubectl}
cluster=$(printf %s "$CUMULUS_CLUSTER" | tr 'A-Z_./' 'a-z---')
"$kubectl" -n "$ns" get pods -l "cumulus.io/cluster=$cluster" -o \
  jsonpath='{range .items[*]}{.metadata.name} {.status.phase} {.metadata.labels.cumulus\.io/node-type}{"\n"}{end}' |
  while read -r pod phase type_name; do
    case "$phase" in
      Running) state=running ;;
      Succeeded) state=terminated ;;
      Failed) state=failed ;;
      *) state=pending ;;
    esac
    echo "$pod $state - $type_name"
  done
