// Memory: the resident set size (RSS) a process keeps after a burst of large work, with the pools
// keeping everything (unbounded bytes, no idle timeout: how the pools worked before they were
// bounded by memory) and with the defaults (16 MiB of idle contexts per pool, freed after 5 s
// idle), and the RSS of a steady loop of 1 KiB calls. Each case runs in a process of its own
// (__test__/fixtures/memory.cjs), garbage collected before each reading.
// Run by `npm run bench` (on the newest Node); alone: node benchmark/memory.mjs
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { repeated } from './corpus.mjs'

const fixture = fileURLToPath(new URL('../__test__/fixtures/memory.cjs', import.meta.url))
const KEEP_ALL = JSON.stringify({ maxIdleBytes: 'Infinity', idleTimeoutMs: 'Infinity' })
const DEFAULTS = JSON.stringify({})

function run(name, ...args) {
  const child = spawnSync(process.execPath, ['--expose-gc', fixture, name, ...args], { encoding: 'utf8' })
  const line = child.stdout?.split('\n').find((text) => text.startsWith('RESULT '))
  if (child.status !== 0 || !line) throw new Error(`${name}: exit ${child.status}\n${child.stderr}`)
  return JSON.parse(line.slice('RESULT '.length))
}

const summary = (result) => ({
  before: result.before,
  afterBurst: result.afterBurst,
  afterTimeout: result.afterTimeout ?? null,
})

const rows = []
const burst = (label, name, ...args) => {
  for (const [pools, options] of [
    ['keep everything', KEEP_ALL],
    ['defaults', DEFAULTS],
  ]) {
    const result = run(name, ...args, options)
    rows.push({ burst: label, pools, ...summary(result) })
    console.log(`${label}, ${pools}: ${JSON.stringify(summary(result))}`)
  }
}

burst('6 × compress(8 MiB, level 19) at once', 'compressBurst', '6', String(8 << 20))
let zstdCli = true
try {
  execFileSync('zstd', ['--version'])
} catch {
  zstdCli = false
}
if (zstdCli) {
  // As `zstd --long=27` writes on a pipe: no recorded size, so the decoder needs its whole window.
  const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-memory-'))
  const file = join(dir, 'long.zst')
  writeFileSync(file, execFileSync('zstd', ['-q', '--long=27', '-3', '-c'], { input: repeated(12 << 20), maxBuffer: 1 << 30 }))
  burst('6 × decompress(12 MiB, zstd --long=27, no recorded size) at once', 'decompressBurst', '6', file)
  rmSync(dir, { recursive: true })
} else console.log('No zstd command-line tool: the long-window decode burst is left out.')

const steady = []
for (const [pools, options] of [
  ['defaults', DEFAULTS],
  ['pooling off', JSON.stringify({ maxIdleContexts: 0 })],
]) {
  const result = run('steady', '3000', options)
  steady.push({
    pools,
    calls: result.calls,
    rssStart: result.rssStart,
    rssEnd: result.rssEnd,
    created: result.end.compressors.created + result.end.decompressors.created,
  })
  console.log(`1 KiB loop, ${pools}: ${JSON.stringify(steady.at(-1))}`)
}

writeFileSync(
  new URL('./results/memory.json', import.meta.url),
  `${JSON.stringify({ node: process.version, rows, steady }, null, 2)}\n`,
)
