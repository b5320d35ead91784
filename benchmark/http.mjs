// HTTP responses through zstd-pool/http against the `compression` middleware (Express's, from
// benchmark/peers): requests per second and bytes on the wire, in every coding each offers, and
// `dcz` against the previous version of the response (as a deploy would have it), for JSON API
// responses of 1 KiB and 64 KiB and the corpus's HTML page; and the bytes on the wire of each text
// file of the corpus. The server runs in a process of its own (this file with `serve`); this
// process is the client, with 32 requests in flight on keep-alive connections. Cells are
// interleaved, round after round, and each is the median of its rounds.
// Run by `npm run bench`; alone: node benchmark/http.mjs
import { fork } from 'node:child_process'
import { createHash } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import { createRequire } from 'node:module'

import { edited, jsonRecords } from '../__test__/records.mjs'

const require = createRequire(import.meta.url)

/** A JSON API response of at least `size` bytes (whole records), and the version before it (one
 * record in 17 differs). */
function jsonVersions(size) {
  const records = jsonRecords(Math.ceil(size / 200) + 1, 1).map(String)
  const older = records.map((record, i) => (i % 17 === 3 ? String(jsonRecords(1, i + 7)[0]) : record))
  let count = 1
  while (`[${records.slice(0, count).join(',')}]`.length < size) count++
  const json = (list) => Buffer.from(`[${list.slice(0, count).join(',')}]`)
  return { current: json(records), previous: json(older), type: 'application/json' }
}

/** A corpus file, and a version before it with 20 edits spread through it. */
function fileVersions(name) {
  const current = readFileSync(new URL(`../__test__/corpus/${name}`, import.meta.url))
  return { current, previous: edited(current, 20), type: 'text/plain' }
}

/** The text files of the corpus (the others do not compress, and the default filters skip their types). */
const TEXT_FILES = ['alice29.txt', 'html', 'lcet10.txt', 'urls.10K']

/** Every body served, by the name in its path. */
function payloads() {
  return {
    'json-1k': jsonVersions(1024),
    'json-64k': jsonVersions(65536),
    ...Object.fromEntries(TEXT_FILES.map((name) => [name, fileVersions(name)])),
  }
}

/** The bodies measured for requests per second. */
const TIMED = ['json-1k', 'json-64k', 'html']

const ROUNDS = Number(process.env.BENCH_HTTP_ROUNDS ?? 5)
const ROUND_MS = Number(process.env.BENCH_HTTP_MS ?? 1500)
const IN_FLIGHT = 32

/** The server process: one node:http server, the middleware chosen by the path's first part. */
function serve() {
  const { compression } = require('../http.js')
  const peer = require('./peers/node_modules/compression')
  const bodies = payloads()
  const dictionaries = Object.entries(bodies).map(([name, { previous, type }]) => ({
    path: `/dictionary/${name}`,
    match: `/*/${name}`,
    data: previous,
    type,
  }))
  const middlewares = {
    none: (_req, _res, next) => next(),
    'zstd-pool/http': compression({ dictionaries }),
    compression: peer(),
  }
  const server = http.createServer((req, res) => {
    const [, middleware, name] = req.url.split('/')
    middlewares[decodeURIComponent(middleware)](req, res, () => {
      res.setHeader('Content-Type', bodies[name].type)
      res.end(bodies[name].current)
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

/** The cells of a body: each middleware with each coding it answers; identity without a
 * middleware, and through zstd-pool/http (its cost when it does not compress). */
function cells(available) {
  const browser = 'gzip, deflate, br, zstd'
  return [
    { name: 'none', coding: 'identity', headers: { 'accept-encoding': browser } },
    { name: 'zstd-pool/http', coding: 'identity', headers: { 'accept-encoding': 'identity' } },
    { name: 'zstd-pool/http', coding: 'zstd', headers: { 'accept-encoding': browser } },
    {
      name: 'zstd-pool/http',
      coding: 'dcz',
      headers: { 'accept-encoding': `${browser}, dcb, dcz`, 'available-dictionary': available },
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
  const bodies = payloads()
  const peerVersion = require('./peers/node_modules/compression/package.json').version
  const rows = []
  try {
    for (const [payload, { current, previous }] of Object.entries(bodies)) {
      const available = `:${createHash('sha256').update(previous).digest('base64')}:`
      for (const cell of cells(available)) {
        const path = `/${encodeURIComponent(cell.name)}/${payload}`
        const { encoding, length } = await fetchOnce(agent, port, path, cell.headers)
        if (encoding !== cell.coding) throw new Error(`${cell.name} answered ${encoding} where ${cell.coding} was asked`)
        rows.push({ ...cell, path, payload, body: current.length, wire: length, rates: [] })
      }
    }
    const timed = rows.filter((row) => TIMED.includes(row.payload))
    for (const row of timed) await rate(agent, port, row.path, row.headers, 200) // warm-up
    for (let round = 0; round < ROUNDS; round++) {
      // Each round in another order, so that no cell always follows the same one.
      const order = round % 2 === 0 ? timed : [...timed].reverse()
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
    rows: rows.map(({ name, coding, payload, body, wire, rates }) => ({
      name,
      coding,
      payload,
      body,
      wire,
      rps: rates.length ? median(rates) : undefined,
    })),
  }
  for (const row of result.rows)
    console.log(
      `http: ${row.payload}, ${row.name}, ${row.coding}: ${row.wire} bytes${row.rps ? `, ${Math.round(row.rps)} requests/s` : ''}`,
    )
  writeFileSync(new URL('./results/http.json', import.meta.url), `${JSON.stringify(result, null, 2)}\n`)
  return result
}

const number = (value) => Math.round(value).toLocaleString('en-US')

/** The report's section (benchmark/report.mjs). */
export function httpSection(result) {
  const peerName = (name) => (name === 'compression' ? result.peer : name)
  const lines = [
    '## HTTP responses',
    '',
    `\`benchmark/http.mjs\`: a node:http server in a process of its own, with zstd-pool/http's \`compression()\` or Express's \`${result.peer}\``,
    `middleware with their defaults (zstd level 3, Brotli quality 4, gzip level 6), serving a JSON API response or the corpus's HTML page; a`,
    `client process with ${result.inFlight} requests in flight on keep-alive connections, on ${result.node} (${result.date}). Requests per second: the median of`,
    `${result.rounds} rounds of ${result.roundMs / 1000} s, the cells interleaved. \`dcz\`: the request holds the previous version of the body as its`,
    'dictionary (RFC 9842): for JSON, one record in 17 differs; for a file, 20 edits spread through it. Client and server share the',
    'machine, so the figures compare the middlewares rather than measure a server alone. Time per request: the inverse of the rate.',
    '',
    '| body | middleware | coding | bytes on the wire | requests/s | time per request |',
    '|---|---|---|---:|---:|---:|',
  ]
  for (const row of result.rows.filter((row) => row.rps !== undefined))
    lines.push(
      `| ${row.payload}, ${number(row.body)} B | ${peerName(row.name)} | ${row.coding} | ${number(row.wire)} | ${number(row.rps)} | ${number(1e6 / row.rps)} µs |`,
    )
  const files = [...new Set(result.rows.map((row) => row.payload))]
  const codings = ['identity', 'gzip', 'br', 'zstd', 'dcz']
  const wire = (payload, coding) =>
    result.rows.find((row) => row.payload === payload && row.coding === coding && row.name !== 'compression')?.wire
  lines.push(
    '',
    'Bytes on the wire for every body, through zstd-pool/http (gzip and br are the same bytes through the `compression` middleware):',
    '',
    `| body | ${codings.join(' | ')} |`,
    `|---|${codings.map(() => '---:').join('|')}|`,
    ...files.map((payload) => `| ${payload} | ${codings.map((coding) => number(wire(payload, coding))).join(' | ')} |`),
  )
  return lines
}

if (process.argv[2] === 'serve') serve()
else if (import.meta.url === `file://${process.argv[1]}`) await measureHttp()
