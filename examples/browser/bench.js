// Times zstd-pool's WebAssembly build against @bokuweb/zstd-wasm in the page, level 3, on real
// text: the first 1 KiB, 64 KiB and 1 MiB of a few books from the repository's test corpus.
// Each operation runs in batches long enough for the page's coarse clock (~20 ms), the
// implementations take turns batch by batch (interleaved rounds, so drift hits them alike), and
// the median batch gives µs per call. The results are on window.benchResults, as JSON.
import * as bokuweb from '@bokuweb/zstd-wasm'
import * as zstd from 'zstd-pool'

const LEVEL = 3
const SIZES = [1 << 10, 64 << 10, 1 << 20]
const BOOKS = ['alice29.txt', 'asyoulik.txt', 'lcet10.txt', 'plrabn12.txt']
const ROUNDS = Number(new URLSearchParams(location.search).get('rounds') ?? 15)
const BATCH_MS = 20

const status = document.querySelector('#status')

async function text() {
  const parts = await Promise.all(
    BOOKS.map(async (name) => {
      const response = await fetch(`./${name}`)
      if (!response.ok) throw new Error(`fetching ${name}: ${response.status} (see the README about the corpus)`)
      return new Uint8Array(await response.arrayBuffer())
    }),
  )
  const all = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let at = 0
  for (const part of parts) {
    all.set(part, at)
    at += part.length
  }
  return all
}

function same(a, b) {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** Times `iterations` calls of `run`, in µs per call. */
async function batch(run, iterations, isAsync) {
  const started = performance.now()
  if (isAsync) for (let i = 0; i < iterations; i++) await run()
  else for (let i = 0; i < iterations; i++) run()
  return ((performance.now() - started) * 1000) / iterations
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

async function run() {
  await bokuweb.init()
  const corpus = await text()
  const rows = []
  for (const size of SIZES) {
    const input = corpus.subarray(0, size)
    const ourFrame = zstd.compressSync(input, LEVEL)
    const theirFrame = bokuweb.compress(input, LEVEL)
    // Each decodes the other's frame: the comparison is between two decoders of the same format.
    if (!same(zstd.decompressSync(theirFrame), input) || !same(bokuweb.decompress(ourFrame), input)) {
      throw new Error(`the two disagree at ${size} bytes`)
    }
    const cases = [
      { op: 'compress', impl: 'zstd-pool compressSync', run: () => zstd.compressSync(input, LEVEL), frameBytes: ourFrame.length },
      { op: 'compress', impl: 'bokuweb compress', run: () => bokuweb.compress(input, LEVEL), frameBytes: theirFrame.length },
      { op: 'compress', impl: 'zstd-pool compress (async)', run: () => zstd.compress(input, LEVEL), isAsync: true },
      { op: 'decompress', impl: 'zstd-pool decompressSync', run: () => zstd.decompressSync(ourFrame) },
      { op: 'decompress', impl: 'bokuweb decompress', run: () => bokuweb.decompress(ourFrame) },
      { op: 'decompress', impl: 'zstd-pool decompress (async)', run: () => zstd.decompress(ourFrame), isAsync: true },
    ]
    // Calibrate: enough calls per batch to fill BATCH_MS (after a warm-up batch).
    for (const item of cases) {
      await batch(item.run, 3, item.isAsync)
      const once = await batch(item.run, 5, item.isAsync)
      item.iterations = Math.max(3, Math.round((BATCH_MS * 1000) / Math.max(once, 1)))
      item.samples = []
    }
    for (let round = 0; round < ROUNDS; round++) {
      status.textContent = `Running… ${size} bytes, round ${round + 1} of ${ROUNDS}`
      for (const item of cases) item.samples.push(await batch(item.run, item.iterations, item.isAsync))
      await new Promise((resolve) => setTimeout(resolve, 0)) // let the page breathe
    }
    for (const item of cases) {
      const micros = median(item.samples)
      rows.push({
        size,
        op: item.op,
        impl: item.impl,
        usPerCall: Number(micros.toFixed(2)),
        mbPerSecond: Number((size / micros).toFixed(1)),
        frameBytes: item.frameBytes,
        calls: item.iterations * ROUNDS,
      })
    }
  }
  return {
    level: LEVEL,
    rounds: ROUNDS,
    userAgent: navigator.userAgent,
    hardwareConcurrency: navigator.hardwareConcurrency,
    crossOriginIsolated: self.crossOriginIsolated,
    rows,
  }
}

function show(results) {
  const table = document.querySelector('#table')
  const head = '<tr><th>size</th><th>call</th><th>µs/call</th><th>MB/s</th><th>frame bytes</th></tr>'
  table.innerHTML =
    head +
    results.rows
      .map(
        (row) =>
          `<tr><td>${row.size}</td><td>${row.impl}</td><td>${row.usPerCall}</td><td>${row.mbPerSecond}</td><td>${row.frameBytes ?? ''}</td></tr>`,
      )
      .join('')
}

/** Runs the timings, shows them, and puts them on window.benchResults. */
export async function start() {
  try {
    const results = await run()
    show(results)
    status.textContent = `Done: level ${LEVEL}, median of ${ROUNDS} interleaved rounds.`
    window.benchResults = JSON.stringify(results)
  } catch (error) {
    status.textContent = `Failed: ${error.stack ?? error}`
    window.benchResults = JSON.stringify({ error: String(error.stack ?? error) })
  }
}
