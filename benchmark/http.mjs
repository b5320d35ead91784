// HTTP responses through zstd-pool/http against the `compression` middleware (Express's, from
// benchmark/peers): requests per second and bytes on the wire, for JSON API responses of 1 KiB
// and 64 KiB, in every coding each offers, and `dcz` against the previous version of the response.
// The server runs in a process of its own (this file with `serve`); this process is the client,
// with 32 requests in flight on keep-alive connections. Cells are interleaved, round after round,
// and each is the median of its rounds.
// Run by `npm run bench`; alone: node benchmark/http.mjs
import { fork } from 'node:child_process'
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import http from 'node:http'
import { createRequire } from 'node:module'

import { jsonRecords } from '../__test__/records.mjs'

const require = createRequire(import.meta.url)

/** A JSON API response of at least `size` bytes (whole records), and the version before it (one
 * record in 17 differs), which a browser holds as a dictionary. */
function bodies(size) {
  const records = jsonRecords(Math.ceil(size / 200) + 1, 1).map(String)
  const older = records.map((record, i) => (i % 17 === 3 ? String(jsonRecords(1, i + 7)[0]) : record))
  let count = 1
  while (`[${records.slice(0, count).join(',')}]`.length < size) count++
  const json = (list) => Buffer.from(`[${list.slice(0, count).join(',')}]`)
  return { current: json(records), previous: json(older) }
}

const SIZES = [1024, 65536]
const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.BENCH_HTTP_MS ?? 1500)
const IN_FLIGHT = 32

/** The server process: one node:http server, the middleware chosen by the path's first part. */
function serve() {
  const { compression } = require('../http.js')
  const peer = require('./peers/node_modules/compression')
  const middlewares = { none: (_req, _res, next) => next() }
  const content = new Map()
  const dictionaries = []
  for (const size of SIZES) {
    const { current, previous } = bodies(size)
    content.set(`${size}`, current)
    dictionaries.push({ path: `/dictionary/${size}`, match: `/*/${size}`, data: previous, type: 'application/json' })
  }
  middlewares['zstd-pool/http'] = compression({ dictionaries })
  middlewares.compression = peer()
  const server = http.createServer((req, res) => {
    const [, name, size] = req.url.split('/')
    middlewares[decodeURIComponent(name)](req, res, () => {
      res.setHeader('Content-Type', 'application/json')
      res.end(content.get(size))
    })
  })
  server.keepAliveTimeout = 60_000
  server.listen(0, '127.0.0.1', () => process.send(server.address().port))
}

/** What a request for `path` with `headers` gets: its Content-Encoding and length on the wire. */
function fetchOnce(agent, port, path, headers) {
  return new Promise((resolve, reject) => {
    const request = http.get({ agent, host: '127.0.0.1', port, path, headers }, (res) => {
      let length = 0
      res.on('data', (chunk) => (length += chunk.length))
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'] ?? 'identity', length }))
      res.on('error', reject)
    })
    request.on('error', reject)
  })
}

/** Requests per second for `ms`, `IN_FLIGHT` at a time. */
async function rate(agent, port, path, headers, ms) {
  let done = 0
  const end = performance.now() + ms
  const start = performance.now()
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (performance.now() < end) {
        await fetchOnce(agent, port, path, headers)
        done++
      }
    }),
  )
  return (done * 1000) / (performance.now() - start)
}

/** The cells: each middleware with each coding it answers (identity, as the baseline, once). */
function cells(previousHash) {
  const browser = 'gzip, deflate, br, zstd'
  return [
    { name: 'none', coding: 'identity', headers: { 'accept-encoding': 'identity' } },
    { name: 'zstd-pool/http', coding: 'zstd', headers: { 'accept-encoding': browser } },
    {
      name: 'zstd-pool/http',
      coding: 'dcz',
      headers: (size) => ({
        'accept-encoding': `${browser}, dcb, dcz`,
        'available-dictionary': `:${previousHash(size)}:`,
      }),
    },
    { name: 'zstd-pool/http', coding: 'br', headers: { 'accept-encoding': 'gzip, br' } },
    { name: 'zstd-pool/http', coding: 'gzip', headers: { 'accept-encoding': 'gzip' } },
    { name: 'compression', coding: 'br', headers: { 'accept-encoding': browser } },
    { name: 'compression', coding: 'gzip', headers: { 'accept-encoding': 'gzip, deflate' } },
  ]
}

export async function measureHttp() {
  const server = fork(new URL(import.meta.url), ['serve'], { stdio: 'inherit' })
  const port = await new Promise((resolve) => server.once('message', resolve))
  const agent = new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT })
  const hash = (size) => createHash('sha256').update(bodies(size).previous).digest('base64')
  const peerVersion = require('./peers/node_modules/compression/package.json').version
  const rows = []
  try {
    for (const size of SIZES)
      for (const cell of cells(hash)) {
        const headers = typeof cell.headers === 'function' ? cell.headers(size) : cell.headers
        const path = `/${encodeURIComponent(cell.name)}/${size}`
        const { encoding, length } = await fetchOnce(agent, port, path, headers)
        if (encoding !== cell.coding) throw new Error(`${cell.name} answered ${encoding} where ${cell.coding} was asked`)
        rows.push({ ...cell, headers, path, size, body: bodies(size).current.length, wire: length, rates: [] })
      }
    for (const row of rows) await rate(agent, port, row.path, row.headers, 200) // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in another order, so that no cell always follows the same one.
      const order = round % 2 === 0 ? rows : [...rows].reverse()
      for (const row of order) row.rates.push(await rate(agent, port, row.path, row.headers, ROUND_MS))
    }
  } finally {
    agent.destroy()
    server.kill()
  }
  const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]
  const result = {
    date: new Date().toISOString().slice(0, 10),
    node: process.version,
    peer: `compression ${peerVersion}`,
    inFlight: IN_FLIGHT,
    rounds: ROUNDS,
    roundMs: ROUND_MS,
    rows: rows.map(({ name, coding, size, body, wire, rates }) => ({ name, coding, size, body, wire, rps: median(rates) })),
  }
  for (const row of result.rows)
    console.log(`http: ${row.size} B, ${row.name}, ${row.coding}: ${row.wire} bytes, ${Math.round(row.rps)} requests/s`)
  writeFileSync(new URL('./results/http.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

/** The report's section (benchmark/report.mjs). */
export function httpSection(result) {
  const lines = [
    '## HTTP responses',
    '',
    `\`benchmark/http.mjs\`: a node:http server in a process of its own, with zstd-pool/http's \`compression()\` or Express's \`${result.peer}\``,
    `middleware with their defaults, serving a JSON API response; a client process with ${result.inFlight} requests in flight on keep-alive`,
    `connections, on ${result.node} (${result.date}). Requests per second: the median of ${result.rounds} rounds of ${result.roundMs / 1000} s, the cells interleaved. \`dcz\`: the`,
    'request holds the previous version of the response (a few records differ) as its dictionary (RFC 9842). Client and server',
    'share the machine, so the figures compare the middlewares rather than measure a server alone.',
    '',
    '| body | middleware | coding | bytes on the wire | requests/s |',
    '|---|---|---|---:|---:|',
  ]
  for (const row of result.rows)
    lines.push(
      `| ${row.body.toLocaleString('en-US')} B | ${row.name === 'compression' ? result.peer : row.name} | ${row.coding} | ${row.wire.toLocaleString('en-US')} | ${Math.round(row.rps).toLocaleString('en-US')} |`,
    )
  return lines
}

if (process.argv[2] === 'serve') serve()
else if (import.meta.url === `file://${process.argv[1]}`) await measureHttp()
