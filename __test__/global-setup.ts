// Runs once before the suite: says which of the tools and runtimes some tests compare against are
// missing here, and so which tests skip (CI installs them all, and there those tests fail instead).
import { spawnSync } from 'node:child_process'

import { nodes } from './helpers'

export default function () {
  if (process.env.CI) return
  const missing: string[] = []
  if (spawnSync('zstd', ['--version']).status !== 0)
    missing.push('the zstd tool (apt-get install zstd): the interop tests against it skip')
  if (spawnSync('nm', ['--version']).status !== 0) missing.push("nm (binutils): the check of the addon's symbols skips")
  if (nodes.length === 1)
    missing.push(
      'Node 22, 24 and 26 (bash scripts/install-runtimes.sh): the hostile-JavaScript cases run on this Node only, and the comparisons with their node:zlib skip',
    )
  for (const line of missing) console.log(`not found: ${line}`)
}
