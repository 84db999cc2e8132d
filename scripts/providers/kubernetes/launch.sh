#!/bin/sh
# launch.sh TYPE COUNT: starts COUNT pods running a Cumulus node of node type TYPE; prints each
# pod's name (the instance id) on a line of its own. The command provider's contract
# (docs/cluster_file.md): the other inputs come from its environment:
#   CUMULUS_HEAD, CUMULUS_TOKEN_FILE, CUMULUS_RESOURCES, CUMULUS_LABELS, CUMULUS_CLUSTER
# Settings (environment): CUMULUS_K8S_NAMESPACE (default: default), CUMULUS_IMAGE (the image
# with `cumulus`, default cumulus:latest), KUBECTL (default kubectl), DRY_RUN=1 (print the
# manifests instead of applying them).
set -eu
type_name=$1
count=$2
ns=${CUMULUS_K8S_NAMESPACE:-default}
kubectl=${KUBECTL:-kubectl}
image=${CUMULUS_IMAGE:-cumulus:latest}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$(printf %s "$CUMULUS_CLUSTER" | tr 'A-Z_./' 'a-z---')
type_label=$(printf %s "$type_name" | tr '/' '-')
type_dns=$(printf %s "$type_name" | tr 'A-Z_./' 'a-z---')
secret="cumulus-token-$cluster"

# One field of "CPU=8,GPU=1,memory=34359738368" ("" if absent).
field() { printf %s "$CUMULUS_RESOURCES" | tr ',' '\n' | sed -n "s/^$1=//p"; }
cpu=$(field CPU); cpu=${cpu:-1}
memory=$(field memory); memory=${memory:-1073741824}
memory=${memory%.*}
gpus=$(field GPU); gpus=${gpus%.*}
gpu_limit=""
if [ -n "$gpus" ] && [ "$gpus" != 0 ]; then gpu_limit=", nvidia.com/gpu: \"$gpus\""; fi

# The cluster token as a Secret (created or updated).
if [ "${DRY_RUN:-0}" != 1 ]; then
  "$kubectl" -n "$ns" create secret generic "$secret" --from-file=token="$CUMULUS_TOKEN_FILE" \
    --dry-run=client -o yaml | "$kubectl" -n "$ns" apply -f - >/dev/null
fi

i=0
while [ "$i" -lt "$count" ]; do
  suffix=$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')
  pod=$(printf %s "cumulus-$cluster-$type_dns-$suffix" | cut -c1-63)
  manifest=$(sed -e "s|@POD@|$pod|g" -e "s|@CLUSTER@|$cluster|g" -e "s|@TYPE_LABEL@|$type_label|g" \
    -e "s|@IMAGE@|$image|g" -e "s|@HEAD@|$CUMULUS_HEAD|g" -e "s|@RESOURCES@|$CUMULUS_RESOURCES|g" \
    -e "s|@LABELS@|$CUMULUS_LABELS,cumulus.instance_id=$pod|g" -e "s|@CPU@|$cpu|g" \
    -e "s|@MEMORY@|$memory|g" -e "s|@GPU_LIMIT@|$gpu_limit|g" -e "s|@SECRET@|$secret|g" \
    "$here/pod.yaml")
  if [ "${DRY_RUN:-0}" = 1 ]; then
    printf '%s\n' "$manifest" >&2
  else
    printf '%s\n' "$manifest" | "$kubectl" -n "$ns" create -f - >/dev/null
  fi
  echo "$pod"
  i=$((i + 1))
done
