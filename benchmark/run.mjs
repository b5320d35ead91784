// `npm run bench`: installs the peers, measures raw libzstd and the pool from Rust (benches/pool.rs),
// runs the suite (benchmark/zstd.bench.ts) on the newest Node (the only one with node:zlib zstd),
// measures multi-threaded compression, dictionaries and streams (benchmark/multithread.mjs,
// benchmark/dictionary.mjs, benchmark/stream.mjs), then writes benchmark/RESULTS.md and
// benchmark/chart.svg.
// BENCH_NODE=current runs it on the Node that runs this script instead; BENCH_RUNS sets how many
// complete runs each cell's median is taken over (3). With BENCH_MODES, BENCH_SIZES or BENCH_LIBS
// it only runs and prints those cells.
import { execFileSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'

import { writeReport } from './report.mjs'
import { newestNode, setupPeers } from './setup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
setupPeers()
const node = process.env.BENCH_NODE === 'current' ? process.execPath : newestNode
const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
const major = version.slice(1).split('.')[0]
mkdirSync(`${root}benchmark/results`, { recursive: true })
const quick = ['BENCH_MODES', 'BENCH_SIZES', 'BENCH_LIBS'].some((name) => process.env[name])
if (quick) {
  // A look at a few cells: printed as it runs, leaving the committed report alone.
  console.log(`A quick run on Node ${version} (filtered; benchmark/RESULTS.md is left as it is) ...`)
  execFileSync(node, ['--expose-gc', 'node_modules/vitest/vitest.mjs', 'bench', '--run'], { cwd: root, stdio: 'inherit' })
  process.exit(0)
}
console.log('Measuring the pool and raw libzstd from Rust (cargo bench --bench pool) ...')
execFileSync('cargo', ['bench', '--quiet', '--bench', 'pool'], { cwd: root, stdio: 'inherit' })
// Each cell is the median of several complete runs, as a shared VM drifts between runs.
const runs = Number(process.env.BENCH_RUNS ?? 3)
for (let run = 1; run <= runs; run++) {
  const output = `benchmark/results/node${major}-run${run}.json`
  console.log(`Benchmark run ${run} of ${runs} on Node ${version} (a few minutes each; blocks print as they finish) ...`)
  execFileSync(node, ['--expose-gc', 'node_modules/vitest/vitest.mjs', 'bench', '--run', '--outputJson', output], {
    cwd: root,
    stdio: 'inherit',
  })
}
console.log('Measuring multi-threaded compression (benchmark/multithread.mjs) ...')
execFileSync(node, ['--expose-gc', 'benchmark/multithread.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring dictionaries (benchmark/dictionary.mjs) ...')
execFileSync(node, ['benchmark/dictionary.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring streams against node:zlib (benchmark/stream.mjs) ...')
execFileSync(node, ['benchmark/stream.mjs'], { cwd: root, stdio: 'inherit' })
writeReport({ major, runs })
