// Multi-threaded compression (`workers`): a 32 MiB input built from the corpus, at levels 1, 3
// and 9 with 0, 2 and 4 workers; a cached context (the default) against a fresh one per call
// (maxIdleMultithreadedContexts: 0), and what a cached context holds in memory.
// Run by `npm run bench`; alone: node --expose-gc benchmark/multithread.mjs
import { execFileSync } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus } from 'node:os'

import { repeated } from './corpus.mjs'

const require = createRequire(import.meta.url)
const zstd = require('../main.js')
const SIZE = 32 << 20

function millis(input, options, calls = 5) {
  zstd.compressSync(input, options)
  const times = []
  for (let i = 0; i < calls; i++) {
    const start = performance.now()
    zstd.compressSync(input, options)
    times.push(performance.now() - start)
  }
  return times.sort((a, b) => a - b)[calls >> 1]
}

/** RSS held by one cached multi-threaded context, measured in a process of its own. */
function rssOfCachedContext(level, workers) {
  const script = `
    const { default: zstd } = await import(${JSON.stringify(new URL('../main.js', import.meta.url).href)})
    const { repeated } = await import(${JSON.stringify(new URL('./corpus.mjs', import.meta.url).href)})
    const input = repeated(${SIZE})
    const rss = () => { gc(); gc(); return process.memoryUsage().rss }
    zstd.compressSync(input, ${level})
    const before = rss()
    zstd.compressSync(input, { level: ${level}, workers: ${workers} })
    const held = rss()
    zstd.configurePool({ maxIdleMultithreadedContexts: 0 })
    const after = rss()
    console.log(JSON.stringify({ held: held - before, freed: held - after }))
  `
  const output = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '-e', script], { encoding: 'utf8' })
  return JSON.parse(output.trim().split('\n').at(-1))
}

export function measureMultithread() {
  const input = repeated(SIZE)
  const rows = []
  const defaultMaxIdle = zstd.poolStats().multithreaded.maxIdleContexts
  for (const level of [1, 3, 9]) {
    for (const workers of [0, 2, 4]) {
      const cached = millis(input, { level, workers })
      zstd.configurePool({ maxIdleMultithreadedContexts: 0 })
      const fresh = workers ? millis(input, { level, workers }) : cached
      zstd.configurePool({ maxIdleMultithreadedContexts: defaultMaxIdle })
      rows.push({ level, workers, cached, fresh })
      console.log(`multithread: level ${level}, workers ${workers}: cached ${cached.toFixed(1)} ms, fresh ${fresh.toFixed(1)} ms`)
    }
  }
  const memory = [3, 9].map((level) => ({ level, workers: 2, ...rssOfCachedContext(level, 2) }))
  const result = { node: process.version, cores: cpus().length, size: SIZE, rows, memory }
  writeFileSync(new URL('./results/multithread.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

if (import.meta.url === `file://${process.argv[1]}`) measureMultithread()
