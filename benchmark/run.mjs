// `npm run bench`: installs the peers, runs the suite (benchmark/zstd.bench.ts, the floor
// included) on the newest Node (the only one with node:zlib zstd), measures multi-threaded
// compression, dictionaries, streams, the batch API, the WebAssembly build and memory
// (benchmark/multithread.mjs, benchmark/dictionary.mjs, benchmark/stream.mjs, benchmark/many.mjs,
// benchmark/wasm.mjs, benchmark/memory.mjs), HTTP responses (benchmark/http.mjs) and random
// reads of a seekable file (benchmark/seekable.mjs), the 1 MiB sync cells process by process
// (benchmark/spread.mjs), then writes benchmark/RESULTS.md and
// benchmark/chart.svg.
// `npm run bench:quick` (or `node benchmark/run.mjs --quick`): a look in under a minute at a few
// cells and at seekable reads of a smaller file, printed, leaving the committed report alone.
// BENCH_NODE=current runs it on the Node that runs this script instead; BENCH_RUNS sets how many
// complete runs each cell's median is taken over (3). With BENCH_MODES, BENCH_SIZES or BENCH_LIBS
// it only runs and prints those cells.
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { collect, disturbed, summary, writeReport } from './report.mjs'
import { newestNode, setupPeers, setupPythonPeers } from './setup.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const started = Date.now()
// The floor (`Floor`) is in the build `npm run build:bench` makes (cargo feature bench-floor),
// not in the product's: this process and every one it starts load that build.
const benchBuild = join(root, 'target/bench')
const floorBinary = readdirSync(benchBuild).find((name) => name.endsWith('.node'))
if (!floorBinary) throw new Error('no build with the floor: npm run build:bench')
process.env.NAPI_RS_NATIVE_LIBRARY_PATH ??= join(benchBuild, floorBinary)
setupPeers()
setupPythonPeers()
const node = process.env.BENCH_NODE === 'current' ? process.execPath : newestNode
const version = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim()
const major = version.slice(1).split('.')[0]
// The build with the floor reaches vitest's workers as ZSTD_POOL_BENCH_BINARY (see
// vitest.config.mts): NAPI_RS_NATIVE_LIBRARY_PATH in vitest's own process would load it as the
// binding of rolldown, vite's bundler, which is a napi-rs package too.
const vitest = (env, extra = []) => {
  const { NAPI_RS_NATIVE_LIBRARY_PATH: binary, ...rest } = process.env
  execFileSync(node, ['--expose-gc', 'node_modules/vitest/vitest.mjs', 'bench', '--run', ...extra], {
    cwd: root,
    stdio: 'inherit',
    env: { ...rest, ZSTD_POOL_BENCH_BINARY: binary, ...env },
  })
}

if (process.argv.includes('--quick')) {
  // The cells a chooser looks at first, 200 ms each, one run.
  const dir = mkdtempSync(`${tmpdir()}/zstd-pool-bench-`)
  console.log(`A quick run on Node ${version}: a few cells, one run (benchmark/RESULTS.md is left as it is) ...`)
  vitest(
    {
      BENCH_MODES: process.env.BENCH_MODES ?? 'cs,ds,ca16,da16',
      BENCH_SIZES: process.env.BENCH_SIZES ?? '1024,65536',
      BENCH_LIBS: process.env.BENCH_LIBS ?? 'zstd-pool,zstd-napi,@toondepauw/node-zstd,node:zlib zstd,raw',
      BENCH_TIME_MS: process.env.BENCH_TIME_MS ?? '200',
      BENCH_WARMUP_MS: process.env.BENCH_WARMUP_MS ?? '50',
    },
    ['--outputJson', `${dir}/quick.json`],
  )
  // zstd-pool against the floor, in pairs (benchmark/overhead.mjs).
  const sizes = process.env.BENCH_SIZES ?? '1024,65536'
  execFileSync(node, ['--expose-gc', 'benchmark/overhead.mjs', sizes, '500', `${dir}/overhead.json`], {
    cwd: root,
    stdio: 'inherit',
  })
  const cells = collect([`${dir}/quick.json`])
  const pairs = JSON.parse(readFileSync(`${dir}/overhead.json`, 'utf8')).rows
  rmSync(dir, { recursive: true })
  console.log(`\n${summary(cells, pairs).join('\n')}`)
  if (disturbed(cells, pairs).length)
    console.log('\nThis run was disturbed (a binding measured faster than raw libzstd): run again.')
  // Random reads of a seekable file (benchmark/seekable.mjs), of a smaller file than the report's.
  console.log('')
  execFileSync(node, ['--expose-gc', 'benchmark/seekable.mjs', '--quick'], { cwd: root, stdio: 'inherit' })
  console.log(`\nTook ${Math.round((Date.now() - started) / 1000)} s.`)
  process.exit(0)
}

mkdirSync(`${root}benchmark/results`, { recursive: true })
if (['BENCH_MODES', 'BENCH_SIZES', 'BENCH_LIBS'].some((name) => process.env[name])) {
  // A look at a few cells: printed as it runs, leaving the committed report alone.
  console.log(`A filtered run on Node ${version} (benchmark/RESULTS.md is left as it is) ...`)
  vitest({})
  process.exit(0)
}
// Each cell is the median of several complete runs, as a shared VM drifts between runs.
const runs = Number(process.env.BENCH_RUNS ?? 3)
for (let run = 1; run <= runs; run++) {
  const output = `benchmark/results/node${major}-run${run}.json`
  console.log(`Benchmark run ${run} of ${runs} on Node ${version} (about 4 minutes each here; blocks print as they finish) ...`)
  vitest({}, ['--outputJson', output])
}
console.log('Measuring calls against the floor and the peers, in pairs (benchmark/overhead.mjs) ...')
execFileSync(node, ['--expose-gc', 'benchmark/overhead.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring multi-threaded compression (benchmark/multithread.mjs) ...')
execFileSync(node, ['--expose-gc', 'benchmark/multithread.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring dictionaries (benchmark/dictionary.mjs) ...')
execFileSync(node, ['benchmark/dictionary.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring streams against node:zlib (benchmark/stream.mjs) ...')
execFileSync(node, ['benchmark/stream.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring the batch API (benchmark/many.mjs) ...')
execFileSync(node, ['benchmark/many.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring the WebAssembly build against the WebAssembly peers (benchmark/wasm.mjs) ...')
execFileSync(node, ['benchmark/wasm.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring HTTP responses against the compression middleware (benchmark/http.mjs) ...')
execFileSync(node, ['benchmark/http.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring random reads of a seekable file against the whole file and pyzstd (benchmark/seekable.mjs) ...')
execFileSync(node, ['--expose-gc', 'benchmark/seekable.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring the 1 MiB sync cells in separate processes (benchmark/spread.mjs) ...')
execFileSync(node, ['benchmark/spread.mjs'], { cwd: root, stdio: 'inherit' })
console.log('Measuring memory after bursts and in a steady loop (benchmark/memory.mjs) ...')
execFileSync(node, ['benchmark/memory.mjs'], { cwd: root, stdio: 'inherit' })
writeReport({ major, runs, seconds: (Date.now() - started) / 1000 })
