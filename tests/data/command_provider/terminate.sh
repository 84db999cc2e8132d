#!/bin/sh
# terminate.sh DIR ID: the command provider's terminate contract: SIGTERM to the instance's
# process group (the daemon leaves the cluster cleanly); an instance already gone is fine.
set -eu
dir=$1
id=$2
[ -e "$dir/$id.type" ] || exit 0
touch "$dir/$id.terminated"
pid=$(cat "$dir/$id.pid" 2>/dev/null || true)
# (dash's kill takes no "--": a negative pid right after the signal names the group.)
if [ -n "$pid" ]; then kill -TERM "-$pid" 2>/dev/null || true; fi
