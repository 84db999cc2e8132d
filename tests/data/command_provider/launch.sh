#!/bin/sh
# launch.sh DIR CUMULUS COUNT: the command provider's launch contract (docs/cluster_file.md) with
# "instances" that are node daemons on this machine, as provider_e2e_test runs them. Starts COUNT
# `CUMULUS start --address $CUMULUS_HEAD ... --block` in the background, each in a session of
# its own, and prints each instance id on a line of its own. Per instance ID, under DIR:
#   ID.type  its node type      ID.pid   the wrapper's pid (= its process group)
#   ID.log   the daemon's output (its ready line names the node)
#   ID.exit  the daemon's exit status, once it exited by itself (e.g. drained)
# The other inputs come from the environment the provider sets: CUMULUS_NODE_TYPE,
# CUMULUS_HEAD, CUMULUS_TOKEN_FILE, CUMULUS_RESOURCES, CUMULUS_LABELS.
set -eu
dir=$1
cumulus=$2
count=$3
mkdir -p "$dir"
i=0
while [ "$i" -lt "$count" ]; do
  id="cmd-$(od -An -N4 -tx4 /dev/urandom | tr -d ' ')"
  printf '%s\n' "$CUMULUS_NODE_TYPE" >"$dir/$id.type"
  mkdir -p "$dir/$id.data"
  # setsid: the node outlives this script and the provider's process group; the wrapper records
  # its own pid first and the daemon's exit status last. stdout is the log, so the provider does
  # not wait for it.
  setsid sh -c 'echo $$ >"$0.pid"; "$@"; echo $? >"$0.exit"' "$dir/$id" \
    "$cumulus" start --address "$CUMULUS_HEAD" --token-file "$CUMULUS_TOKEN_FILE" \
    --resources "$CUMULUS_RESOURCES" --labels "$CUMULUS_LABELS,cumulus.instance_id=$id" \
    --data-dir "$dir/$id.data" --object-store-memory "${OBJECT_STORE_MEMORY:-160M}" \
    --wait-for-nodes --join-timeout 60 --block >"$dir/$id.log" 2>&1 </dev/null &
  echo "$id"
  i=$((i + 1))
done
