// `npm run test:browser`: the browser entry end to end, as a user gets it. Packs zstd-pool and
// zstd-pool-wasm32-wasi (the WebAssembly build, from `npm run build:wasi`), installs both with
// vite into a copy of examples/browser, builds it, serves dist/ cross-origin isolated from a small
// local server and drives Debian's Chromium through playwright-core: round trips, frames crossing
// between the native build (here, in Node) and the page, errors, a dictionary, then the timing
// page. Ends with "N passed, N failed"; exits 0 only when all passed. Nothing is left in the tree:
// packs, install and build happen in a temporary folder (kept when ZSTD_POOL_KEEP_TMP is set).
//
// Environment: CHROMIUM (default /usr/bin/chromium, installed with apt-get when missing),
// BENCH_ROUNDS (the timing page's rounds, default 15; 0 skips it). With --save the timings go
// to benchmark/results/browser.json, where the benchmark report reads them.

import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  cpSync,
  createReadStream,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { extname, join, normalize, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import { thisMachine } from '../benchmark/machine.mjs'

const require = createRequire(import.meta.url)
const root = fileURLToPath(new URL('..', import.meta.url))
const started = Date.now()
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium'
const benchRounds = Number(process.env.BENCH_ROUNDS ?? 15)
const WASM_OUTPUTS = [
  'zstd-pool.wasm32-wasi.wasm',
  'zstd-pool.wasi.cjs',
  'zstd-pool.wasi.d.cts',
  'zstd-pool.wasi-browser.js',
  'wasi-worker.mjs',
  'wasi-worker-browser.mjs',
]

const elapsed = () => `${((Date.now() - started) / 1000).toFixed(1)}s`
const log = (message) => console.log(`[${elapsed()}] ${message}`)

let passed = 0
let failed = 0

/** One check: `run` returns a short detail, or throws; it has `seconds` (page.evaluate has no timeout). */
async function check(name, run, seconds = 180) {
  let timer
  try {
    const timeout = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer in ${seconds} s`)), seconds * 1000)
    })
    const detail = await Promise.race([run(), timeout])
    passed++
    console.log(`  ok    ${name}${detail ? ` (${detail})` : ''}`)
  } catch (error) {
    failed++
    console.log(`  FAIL  ${name}: ${error?.stack ?? error}`)
  } finally {
    clearTimeout(timer)
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message)
}

/** Runs a command to completion; throws with its output if it fails. */
function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    encoding: 'utf8',
    timeout: 10 * 60_000,
    maxBuffer: 64 << 20,
    ...options,
    env: {
      ...process.env,
      npm_config_update_notifier: 'false',
      npm_config_fund: 'false',
      npm_config_audit: 'false',
      ...options.env,
    },
  })
  if (result.error || result.status !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.error?.message ?? `exit ${result.status}`})\n${result.stdout ?? ''}${result.stderr ?? ''}`,
    )
  }
  return result.stdout
}

// ---------------------------------------------------------------------------------------------
// Chromium, the packages, the example

function ensureChromium() {
  if (existsSync(chromiumPath)) return
  if (process.env.CHROMIUM) throw new Error(`CHROMIUM=${chromiumPath} does not exist`)
  log('installing chromium (apt-get)')
  const env = { DEBIAN_FRONTEND: 'noninteractive' }
  run('apt-get', ['update', '-qq'], { env })
  run('apt-get', ['install', '-y', '-qq', 'chromium'], { env })
  assert(existsSync(chromiumPath), `apt-get installed chromium, but not at ${chromiumPath}`)
}

/** Packs both packages into `tmp`, as the release would publish them. */
function pack(tmp) {
  const missing = WASM_OUTPUTS.filter((name) => !existsSync(join(root, name)))
  assert(missing.length === 0, `the WebAssembly build is missing (${missing.join(', ')}): run npm run build:wasi first`)
  // --ignore-scripts: `npm pack` runs `prepare`, which would rebuild the native addon.
  const main = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', tmp], { cwd: root }))[0]
  const wasmDir = join(tmp, 'wasm32-wasi')
  cpSync(join(root, 'npm/wasm32-wasi'), wasmDir, { recursive: true })
  for (const name of WASM_OUTPUTS) cpSync(join(root, name), join(wasmDir, name))
  const wasm = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', tmp], { cwd: wasmDir }))[0]
  const packed = new Set(wasm.files.map((file) => file.path))
  const unpacked = WASM_OUTPUTS.filter((name) => !packed.has(name))
  assert(unpacked.length === 0, `npm/wasm32-wasi/package.json "files" leaves out ${unpacked.join(', ')}`)
  assert(
    main.files.some((file) => file.path === 'browser.mjs'),
    "zstd-pool's package leaves out browser.mjs",
  )
  return [join(tmp, main.filename), join(tmp, wasm.filename)]
}

/** Copies the example into `tmp`, installs the two tarballs and vite there, and builds it. */
function buildExample(tmp, tarballs) {
  const app = join(tmp, 'app')
  const source = join(root, 'examples/browser')
  const skip = new Set(['node_modules', 'dist', 'package-lock.json'].map((name) => join(source, name)))
  cpSync(source, app, { recursive: true, filter: (path) => !skip.has(path) })
  run('npm', ['install', '--prefer-offline', '--loglevel=error', ...tarballs], { cwd: app })
  run(process.execPath, [join(app, 'node_modules/vite/bin/vite.js'), 'build', '--logLevel', 'warn'], {
    cwd: app,
    env: { ZSTD_POOL_CORPUS: join(root, '__test__/corpus') },
  })
  return app
}

/** TypeScript, in a bundler's resolution with the `browser` condition, types the browser entry. */
function typeCheck(app) {
  const dir = join(app, 'types-check')
  mkdirSync(dir)
  writeFileSync(
    join(dir, 'check.ts'),
    [
      "import { compress, compressSync, Dictionary, MAX_LEVEL } from 'zstd-pool'",
      "const frame = compressSync('text', { level: MAX_LEVEL, checksum: true })",
      'const later: Promise<Uint8Array> = compress(frame, { dictionary: new Dictionary(frame), signal: AbortSignal.timeout(1000) })',
      // Results are ArrayBuffer-backed, which DOM APIs that take a BufferSource require.
      "export const uses = [later, new Blob([frame]), crypto.subtle.digest('SHA-256', frame)]",
      '',
    ].join('\n'),
  )
  const options = { module: 'esnext', moduleResolution: 'bundler', customConditions: ['browser'], target: 'es2022' }
  const compilerOptions = { ...options, lib: ['es2022', 'dom'], types: [], strict: true, noEmit: true, traceResolution: true }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['check.ts'] }))
  const tsc = require.resolve('typescript/bin/tsc', { paths: [root] })
  const trace = run(process.execPath, [tsc, '-p', dir])
  const resolved = /Module name 'zstd-pool' was successfully resolved to '([^']+)'/.exec(trace)?.[1]
  assert(
    resolved?.endsWith('/zstd-pool/browser.d.mts'),
    `'zstd-pool' resolves to ${resolved} (package.json "exports": "browser" must come before "types")`,
  )
  return 'zstd-pool resolves to browser.d.mts, and a use of it type-checks'
}

// ---------------------------------------------------------------------------------------------
// The server: dist/, cross-origin isolated

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
}

function serve(dir) {
  const server = createServer((request, response) => {
    const headers = {
      'Cross-Origin-Opener-Policy': 'same-origin',
      'Cross-Origin-Embedder-Policy': 'require-corp',
      'Cross-Origin-Resource-Policy': 'same-origin',
      'Cache-Control': 'no-store',
    }
    let path
    try {
      path = normalize(join(dir, decodeURIComponent(new URL(request.url, 'http://x').pathname)))
    } catch {
      response.writeHead(400, headers).end()
      return
    }
    if (path !== dir && !path.startsWith(dir + sep)) {
      response.writeHead(403, headers).end()
      return
    }
    if (existsSync(path) && statSync(path).isDirectory()) path = join(path, 'index.html')
    if (!existsSync(path) || request.method !== 'GET') {
      response.writeHead(request.method === 'GET' ? 404 : 405, headers).end()
      return
    }
    headers['Content-Type'] = MIME[extname(path)] ?? 'application/octet-stream'
    headers['Content-Length'] = statSync(path).size
    response.writeHead(200, headers)
    createReadStream(path).pipe(response)
  })
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve(server))
  })
}

// ---------------------------------------------------------------------------------------------
// In the page: helpers the checks use (bytes cross as base64)

function installHelpers() {
  window.t = {
    fromBase64(text) {
      const binary = atob(text)
      const bytes = new Uint8Array(binary.length)
      for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
      return bytes
    },
    toBase64(bytes) {
      let binary = ''
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000))
      return btoa(binary)
    },
    same(a, b) {
      if (a.length !== b.length) return false
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
      return true
    },
    async sha256(bytes) {
      const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
      return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')
    },
    /** The frame header's flags: a zstd frame, with the checksum and the content size recorded? */
    header(frame) {
      const magic = frame[0] === 0x28 && frame[1] === 0xb5 && frame[2] === 0x2f && frame[3] === 0xfd
      const descriptor = frame[4]
      return {
        magic,
        checksum: ((descriptor >> 2) & 1) === 1,
        contentSize: descriptor >> 6 !== 0 || ((descriptor >> 5) & 1) === 1,
      }
    },
    /** What a call threw (or rejected with): its class, code and message. */
    async failure(call) {
      try {
        await call()
      } catch (error) {
        return {
          name: error?.constructor?.name,
          isError: error instanceof Error,
          code: error?.code,
          message: String(error?.message),
        }
      }
      return null
    },
    payloads: {},
  }
}

// ---------------------------------------------------------------------------------------------
// The checks

const KiB = 1024
const SIZES = [0, KiB, 64 * KiB, KiB * KiB]

/** Real text, not random bytes: books from the test corpus, end to end, cut to `size`. */
function textPayload(size) {
  const books = ['alice29.txt', 'asyoulik.txt', 'lcet10.txt', 'plrabn12.txt'].map((name) =>
    readFileSync(join(root, '__test__/corpus', name)),
  )
  return Buffer.concat(books).subarray(0, size)
}

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex')

async function checks(page, native) {
  await check('the page loads cross-origin isolated and shows a round trip', async () => {
    await page.waitForFunction(() => document.body.dataset.status, null, { timeout: 60_000 })
    const state = await page.evaluate(() => ({
      status: document.body.dataset.status,
      isolated: self.crossOriginIsolated,
      text: document.querySelector('#result').textContent,
    }))
    assert(state.isolated === true, 'the page is not cross-origin isolated')
    assert(state.status === 'ok', `the page says: ${state.text}`)
    return state.text.split('\n')[0]
  })

  await page.evaluate(installHelpers)

  await check('the browser entry exports the API', async () => {
    const api = await page.evaluate(() => ({
      functions: ['compressSync', 'decompressSync', 'compress', 'decompress', 'Dictionary'].filter(
        (name) => typeof window.zstd[name] === 'function',
      ),
      levels: [window.zstd.MIN_LEVEL, window.zstd.MAX_LEVEL, window.zstd.DEFAULT_LEVEL],
    }))
    assert(api.functions.length === 5, `functions: ${api.functions}`)
    const [min, max, fallback] = api.levels
    assert(min === native.MIN_LEVEL && max === native.MAX_LEVEL && fallback === native.DEFAULT_LEVEL, `levels ${api.levels}`)
    return `levels ${min}..${max}, default ${fallback}`
  })

  for (const size of SIZES) {
    const input = textPayload(size)
    await page.evaluate(
      ([size, text]) => {
        window.t.payloads[size] = window.t.fromBase64(text)
      },
      [size, input.toString('base64')],
    )
    for (const mode of ['sync', 'async']) {
      const options = mode === 'sync' ? { level: 19, checksum: true } : { level: 7, checksum: true }
      await check(`${mode} round trip, ${size} bytes, level ${options.level} with checksum`, async () => {
        const outcome = await page.evaluate(
          async ([size, mode, options]) => {
            const { zstd, t } = window
            const input = t.payloads[size]
            const frame = mode === 'sync' ? zstd.compressSync(input, options) : await zstd.compress(input, options)
            const back = mode === 'sync' ? zstd.decompressSync(frame) : await zstd.decompress(frame)
            return {
              types: [frame, back].map((bytes) => `${bytes.constructor.name}/${bytes.buffer.constructor.name}`),
              header: t.header(frame),
              frameLength: frame.length,
              same: t.same(back, input),
              frame: t.toBase64(frame),
            }
          },
          [size, mode, options],
        )
        assert(outcome.types.join() === 'Uint8Array/ArrayBuffer,Uint8Array/ArrayBuffer', `results are ${outcome.types}`)
        assert(
          outcome.header.magic && outcome.header.checksum && outcome.header.contentSize,
          `header ${JSON.stringify(outcome.header)}`,
        )
        assert(outcome.same, 'the round trip changed the data')
        // The same frame, decoded by the native build, gives the same bytes.
        assert(
          native.decompressSync(Buffer.from(outcome.frame, 'base64')).equals(input),
          'the native build decodes it differently',
        )
        return `${size} -> ${outcome.frameLength} bytes`
      })
    }
  }

  await check('concurrent async calls (8 x 1 MiB, on the workers)', async () => {
    const outcome = await page.evaluate(async () => {
      const { zstd, t } = window
      const input = t.payloads[1 << 20]
      const inputs = Array.from({ length: 8 }, (_, i) => input.subarray(i * 1024))
      const frames = await Promise.all(inputs.map((data, i) => zstd.compress(data, { level: 1 + i, checksum: true })))
      const backs = await Promise.all(frames.map((frame) => zstd.decompress(frame)))
      return backs.map((back, i) => t.same(back, inputs[i]))
    })
    assert(outcome.every(Boolean), `results: ${outcome}`)
  })

  const big = textPayload(KiB * KiB)
  await check('a frame made by the native build in Node decodes in the page', async () => {
    const frames = [
      native.compressSync(big, { level: 19, checksum: true }),
      Buffer.concat([native.compressSync(big.subarray(0, 1000), 1), native.compressSync(big.subarray(1000), -3)]),
    ]
    const hashes = await page.evaluate(
      async (encoded) => {
        const { zstd, t } = window
        const results = []
        for (const text of encoded) {
          const frame = t.fromBase64(text)
          results.push(await t.sha256(zstd.decompressSync(frame)), await t.sha256(await zstd.decompress(frame)))
        }
        return results
      },
      frames.map((frame) => frame.toString('base64')),
    )
    const expected = sha256(big)
    assert(
      hashes.every((hash) => hash === expected),
      `hashes ${hashes} != ${expected}`,
    )
    return `one frame of ${frames[0].length} bytes, two concatenated; sync and async`
  })

  await check('a frame made in the page decodes with the native build in Node', async () => {
    const frames = await page.evaluate(async () => {
      const { zstd, t } = window
      const input = t.payloads[1 << 20]
      return [t.toBase64(zstd.compressSync(input, { level: 19, checksum: true })), t.toBase64(await zstd.compress(input, -1))]
    })
    for (const text of frames) {
      const back = native.decompressSync(Buffer.from(text, 'base64'))
      assert(back.equals(big), 'the native build decoded different bytes')
    }
    return `levels 19 and -1, ${frames.map((text) => Buffer.from(text, 'base64').length).join(' and ')} bytes`
  })

  await check('a corrupt frame is rejected with an Error coded ZSTD_error_*', async () => {
    const failures = await page.evaluate(async () => {
      const { zstd, t } = window
      const frame = zstd.compressSync(t.payloads[64 * 1024], { checksum: true })
      const flipped = frame.slice()
      flipped[flipped.length >> 1] ^= 0xff
      const lastByte = frame.slice()
      lastByte[lastByte.length - 1] ^= 0x01 // the checksum
      const notZstd = new TextEncoder().encode('this is not a zstd frame at all')
      return [
        await t.failure(() => zstd.decompressSync(flipped)),
        await t.failure(() => zstd.decompress(flipped)),
        await t.failure(() => zstd.decompressSync(lastByte)),
        await t.failure(() => zstd.decompress(notZstd)),
        await t.failure(() => zstd.decompressSync(frame.subarray(0, frame.length - 10))),
      ]
    })
    for (const failure of failures) {
      assert(failure !== null, 'a corrupt frame was decoded')
      assert(failure.isError && /^ZSTD_error_/.test(failure.code), `got ${JSON.stringify(failure)}`)
    }
    return [...new Set(failures.map((failure) => failure.code))].join(', ')
  })

  await check('a wrong argument type gives a TypeError', async () => {
    const failures = await page.evaluate(async () => {
      const { zstd, t } = window
      return [
        await t.failure(() => zstd.compressSync(12345)),
        await t.failure(() => zstd.decompressSync({ length: 3 })),
        await t.failure(() => zstd.compress([1, 2, 3])),
        await t.failure(() => zstd.decompress(new Uint8Array(8), { dictionary: 'words' })),
      ]
    })
    for (const failure of failures) {
      assert(failure?.name === 'TypeError' && failure.code === 'ERR_INVALID_ARG_TYPE', `got ${JSON.stringify(failure)}`)
    }
    const range = await page.evaluate(() => window.t.failure(() => window.zstd.compressSync('x', 99)))
    assert(range?.name === 'RangeError' && range.code === 'ERR_OUT_OF_RANGE', `level 99 gave ${JSON.stringify(range)}`)
    return 'and level 99 a RangeError'
  })

  await check('a Dictionary round trip (dictionary trained by the native build)', async () => {
    const urls = readFileSync(join(root, '__test__/corpus/urls.10K'), 'latin1').split('\n')
    const samples = []
    for (let i = 0; i + 20 <= urls.length; i += 20) samples.push(Buffer.from(urls.slice(i, i + 20).join('\n'), 'latin1'))
    const dictionary = native.trainDictionarySync(samples.slice(0, 400), { size: 16 * KiB })
    const message = samples[450]
    const outcome = await page.evaluate(
      async ([dictionaryText, messageText]) => {
        const { zstd, t } = window
        const dictionary = new zstd.Dictionary(t.fromBase64(dictionaryText))
        const message = t.fromBase64(messageText)
        const plain = zstd.compressSync(message, 3)
        const frame = zstd.compressSync(message, { level: 3, dictionary })
        const asyncFrame = await zstd.compress(message, { level: 3, dictionary })
        return {
          id: dictionary.id,
          size: dictionary.size,
          plain: plain.length,
          withDictionary: frame.length,
          same:
            t.same(zstd.decompressSync(frame, { dictionary }), message) &&
            t.same(await zstd.decompress(asyncFrame, { dictionary }), message),
          without: await t.failure(() => zstd.decompressSync(frame)),
          frame: t.toBase64(frame),
        }
      },
      [dictionary.toString('base64'), message.toString('base64')],
    )
    const nativeDictionary = new native.Dictionary(dictionary)
    assert(outcome.id === nativeDictionary.id && outcome.id !== 0, `dictionary id ${outcome.id}, native ${nativeDictionary.id}`)
    assert(outcome.size === dictionary.length, `size ${outcome.size}`)
    assert(outcome.same, 'the dictionary round trip changed the data')
    assert(
      outcome.withDictionary < outcome.plain,
      `no smaller with the dictionary: ${outcome.withDictionary} vs ${outcome.plain}`,
    )
    assert(/^ZSTD_error_/.test(outcome.without?.code ?? ''), `without the dictionary: ${JSON.stringify(outcome.without)}`)
    const back = native.decompressSync(Buffer.from(outcome.frame, 'base64'), { dictionary: nativeDictionary })
    assert(back.equals(message), "the native build decoded the page's dictionary frame differently")
    return `id ${outcome.id}: ${message.length} -> ${outcome.withDictionary} bytes (${outcome.plain} without)`
  })
}

// ---------------------------------------------------------------------------------------------
// The timing page

function table(results) {
  const rows = results.rows.map((row) => [
    String(row.size),
    row.impl,
    row.usPerCall.toFixed(1),
    row.mbPerSecond.toFixed(1),
    String(row.frameBytes ?? ''),
  ])
  const head = ['bytes', 'call (level 3)', 'µs/call', 'MB/s', 'frame']
  const widths = head.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i].length)))
  const line = (cells) => cells.map((cell, i) => (i === 1 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')
  return [line(head), ...rows.map(line)].join('\n')
}

/** Writes the timings where the benchmark report reads them (benchmark/results/browser.json). */
function save(results) {
  const names = {
    'zstd-pool compressSync': 'zstd-pool (WebAssembly), sync',
    'zstd-pool decompressSync': 'zstd-pool (WebAssembly), sync',
    'zstd-pool compress (async)': 'zstd-pool (WebAssembly), async',
    'zstd-pool decompress (async)': 'zstd-pool (WebAssembly), async',
    'bokuweb compress': '@bokuweb/zstd-wasm',
    'bokuweb decompress': '@bokuweb/zstd-wasm',
  }
  const browser = results.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? results.userAgent
  const rows = results.rows.map((row) => ({
    op: row.op,
    size: row.size,
    name: names[row.impl] ?? row.impl,
    micros: row.usPerCall,
  }))
  const file = join(root, 'benchmark/results/browser.json')
  const measured = { browser, date: new Date().toISOString().slice(0, 10), machine: thisMachine(), rounds: results.rounds, rows }
  writeFileSync(file, `${JSON.stringify(measured, null, 2)}\n`)
  log(`wrote ${file}`)
}

async function bench(page, base) {
  await check(
    'the timing page runs (zstd-pool vs @bokuweb/zstd-wasm 0.0.27)',
    async () => {
      await page.goto(`${base}/index.html?rounds=${benchRounds}`)
      await page.waitForFunction(() => window.benchResults, null, { timeout: 5 * 60_000, polling: 250 })
      const results = JSON.parse(await page.evaluate(() => window.benchResults))
      assert(!results.error, results.error)
      console.log(
        `\n${results.userAgent}, ${results.hardwareConcurrency} threads; median of ${results.rounds} interleaved rounds\n`,
      )
      console.log(`${table(results)}\n`)
      if (process.argv.includes('--save')) save(results)
      return `${results.rows.length} timings`
    },
    360,
  )
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const tmp = mkdtempSync(join(tmpdir(), 'zstd-pool-browser-'))
  let server
  let browser
  const pageLog = []
  try {
    ensureChromium()
    log('packing zstd-pool and zstd-pool-wasm32-wasi')
    const tarballs = pack(tmp)
    log('installing them with vite into a copy of examples/browser, and building it')
    const app = buildExample(tmp, tarballs)
    await check('TypeScript with customConditions ["browser"] types the browser entry', () => typeCheck(app))
    const dist = join(app, 'dist')
    server = await serve(dist)
    const base = `http://127.0.0.1:${server.address().port}`
    log(`serving ${dist} at ${base}; starting ${chromiumPath}`)
    const { chromium } = require('playwright-core')
    browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      timeout: 60_000,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    })
    const page = await browser.newPage()
    page.setDefaultTimeout(120_000)
    page.on('console', (message) => pageLog.push(`console.${message.type()}: ${message.text()}`))
    page.on('pageerror', (error) => pageLog.push(`page error: ${error.stack ?? error}`))
    page.on('requestfailed', (request) => pageLog.push(`request failed: ${request.url()} ${request.failure()?.errorText}`))
    await page.goto(`${base}/index.html`)
    log(`checks in ${browser.version ? `Chromium ${browser.version()}` : 'Chromium'}`)
    await checks(page, require(join(root, 'main.js')))
    if (benchRounds > 0) await bench(page, base)
  } catch (error) {
    failed++
    console.log(`  FAIL  ${error?.stack ?? error}`)
  } finally {
    if (failed > 0 && pageLog.length > 0) console.log(`\nThe page's log:\n${pageLog.slice(-50).join('\n')}\n`)
    await browser?.close().catch(() => {})
    await new Promise((resolve) => (server ? server.close(resolve) : resolve()))
    if (process.env.ZSTD_POOL_KEEP_TMP) log(`kept ${tmp}`)
    else rmSync(tmp, { recursive: true, force: true })
  }
  log('done')
  console.log(`${passed} passed, ${failed} failed`)
  process.exitCode = failed === 0 ? 0 : 1
}

// Whatever hangs, the run ends: a watchdog past any reasonable duration.
setTimeout(() => {
  console.log(`  FAIL  timed out after ${elapsed()}\n${passed} passed, ${failed + 1} failed`)
  process.exit(1)
}, 20 * 60_000).unref()

await main()
