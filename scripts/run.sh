#!/usr/bin/env bash
# The README's run command: install what is missing, build, open tokenloop on the bundled model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/deps.sh"
"$root/scripts/build.sh" "$root/build"
exec "$root/build/cli/tokenloop" "$@"
