#!/bin/sh
# list.sh DIR: the command provider's list contract for the instances launch.sh started under DIR:
# "ID STATE NODE_ID|- TYPE" per instance. pending until the daemon printed its ready line, then
# running while it lives; terminated once terminate.sh was called or it exited 0 by itself;
# failed if it died otherwise.
set -eu
dir=$1
for type_file in "$dir"/*.type; do
  [ -e "$type_file" ] || continue
  base=${type_file%.type}
  id=${base##*/}
  node=$(sed -n 's/^cumulus node ready node_id=\([0-9a-f]*\).*/\1/p' "$base.log" 2>/dev/null | head -n 1)
  pid=$(cat "$base.pid" 2>/dev/null || true)
  if [ -e "$base.terminated" ]; then
    state=terminated
  elif [ -e "$base.exit" ]; then
    if [ "$(cat "$base.exit")" = 0 ]; then state=terminated; else state=failed; fi
  elif [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null; then
    if [ -n "$node" ]; then state=running; else state=pending; fi
  else
    state=failed
  fi
  echo "$id $state ${node:--} $(cat "$type_file")"
done
