#!/bin/sh
# launch_fails.sh: a launch that fails the way a cloud CLI does (exit 3, one line on stderr).
echo "quota exceeded in zone test-1a" >&2
exit 3
