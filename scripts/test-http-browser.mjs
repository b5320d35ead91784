// `npm run test:http-browser`: zstd-pool/http judged by a real browser. A node:http server with
// the middleware on localhost, and Debian's Chromium (through playwright-core) as the client: it
// fetches a dictionary, then a resource the dictionary covers, which must come as `dcz` (RFC
// 9842) and decode to the right bytes; a plain zstd response; and a stream flushed event by event,
// which the page must read before the server writes the next. Ends with "N passed, N failed";
// exits 0 only when all passed.
//
// Environment: CHROMIUM (default /usr/bin/chromium; run scripts/test-browser.mjs, or apt-get
// install chromium, first).

import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import { createServer } from 'node:http'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { compression } = require('../http.js')
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium'

let passed = 0
let failed = 0

async function check(name, run) {
  try {
    const detail = await run()
    passed++
    console.log(`  ok    ${name}${detail ? ` (${detail})` : ''}`)
  } catch (error) {
    failed++
    console.log(`  FAIL  ${name}: ${error?.stack ?? error}`)
  }
}

function assert(condition, message) {
  if (!condition) throw new Error(message)
}

// A deploy's old and new version of one JSON resource: the old one is the dictionary.
const record = (i, version) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'], version: i % 500 === 7 ? version : 1 })
const v1 = JSON.stringify(Array.from({ length: 3000 }, (_, i) => record(i, 1)))
const v2 = JSON.stringify(Array.from({ length: 3000 }, (_, i) => record(i, 2)))
const plain = 'zstd for every browser that asks for it. '.repeat(500)
// A large resource (a 3 MiB bundle, say) and its next version: against a dictionary this large,
// a body given whole is compressed as patch-from (http.js).
let seed = 7
const bundle1 = Array.from({ length: 3 << 20 }, () => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff
  return String.fromCharCode(97 + (seed % 26))
}).join('')
const bundle2 = `${bundle1.slice(0, 1 << 20)}/* new */${bundle1.slice((1 << 20) + 9)}`
const sha256 = (text) => createHash('sha256').update(text).digest('hex')

/** What the server saw and sent, by path. */
const seen = new Map()
const acks = new Map()
/** Events the page did not acknowledge in time: it did not get them before the server wrote on. */
let unread = 0

const middleware = compression({
  dictionaries: [
    { path: '/dictionaries/api-v1', match: '/api/*', data: v1, type: 'application/json', id: 'api-v1' },
    { path: '/dictionaries/bundle-v1', match: '/js/*', data: bundle1, type: 'text/javascript' },
  ],
})

function handle(req, res) {
  const path = new URL(req.url, 'http://x').pathname
  // What the socket carried for this response (its headers and body), for the sizes checked.
  const socketWritten = req.socket.bytesWritten
  res.on('finish', () =>
    seen.set(path, {
      acceptEncoding: req.headers['accept-encoding'],
      availableDictionary: req.headers['available-dictionary'],
      contentEncoding: res.getHeader('content-encoding'),
      wire: req.socket.bytesWritten - socketWritten,
    }),
  )
  if (path === '/') {
    res.setHeader('Content-Type', 'text/html; charset=utf-8')
    res.end('<!doctype html><title>zstd-pool/http</title><p>zstd-pool/http')
  } else if (path === '/api/items') {
    res.setHeader('Content-Type', 'application/json')
    res.end(v2)
  } else if (path === '/js/app.js') {
    res.setHeader('Content-Type', 'text/javascript')
    res.end(bundle2)
  } else if (path === '/plain') {
    res.setHeader('Content-Type', 'text/plain; charset=utf-8')
    res.end(plain)
  } else if (path === '/events') {
    streamEvents(res)
  } else if (path === '/ack') {
    acks.get(new URL(req.url, 'http://x').searchParams.get('n'))?.()
    res.end()
  } else {
    res.statusCode = 404
    res.end()
  }
}

/** Three events, each flushed, each written only once the page says it read the one before. */
async function streamEvents(res) {
  res.setHeader('Content-Type', 'text/event-stream')
  res.setHeader('Cache-Control', 'no-store')
  for (let i = 0; i < 3; i++) {
    const read = new Promise((resolve) => acks.set(String(i), resolve))
    res.write(`data: event ${i}\n\n`)
    res.flush()
    const timeout = new Promise((resolve) => setTimeout(resolve, 5_000, 'timeout'))
    if ((await Promise.race([read, timeout])) === 'timeout') unread++
  }
  res.end()
}

async function main() {
  if (!existsSync(chromiumPath)) {
    console.log(`no Chromium at ${chromiumPath}: run scripts/test-browser.mjs (it installs it) or set CHROMIUM`)
    console.log('0 passed, 1 failed')
    process.exit(1)
  }
  const server = createServer((req, res) => middleware(req, res, () => handle(req, res)))
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  // localhost, which browsers treat as a secure context, as dictionaries need.
  const base = `http://localhost:${server.address().port}`
  const { chromium } = require('playwright-core')
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    args: [`--host-resolver-rules=MAP localhost 127.0.0.1`],
  })
  try {
    const page = await browser.newPage()
    await page.goto(base)

    await check('a resource the dictionary covers comes as dcz, and the page reads the new version', async () => {
      const dictionary = await page.evaluate(async () => (await (await fetch('/dictionaries/api-v1')).text()).length)
      assert(dictionary === v1.length, `the dictionary read as ${dictionary} bytes`)
      // The browser stores the dictionary once its response is complete: ask until it says so.
      let read
      for (let attempt = 0; attempt < 20; attempt++) {
        read = await page.evaluate(async () => {
          const text = await (await fetch(`/api/items?attempt=${Date.now()}`)).text()
          const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
          return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')
        })
        if (seen.get('/api/items')?.contentEncoding === 'dcz') break
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      const request = seen.get('/api/items')
      assert(request?.contentEncoding === 'dcz', `sent ${request?.contentEncoding} to ${JSON.stringify(request)}`)
      assert(request.availableDictionary === `:${createHash('sha256').update(v1).digest('base64')}:`, 'not the hash of v1')
      assert(read === sha256(v2), 'the page read other bytes than the new version')
      return `Accept-Encoding: ${request.acceptEncoding}`
    })

    await check('against a 3 MiB dictionary, a new version comes as dcz in a few hundred bytes (patch-from)', async () => {
      await page.evaluate(async () => (await fetch('/dictionaries/bundle-v1')).text())
      let read
      for (let attempt = 0; attempt < 20; attempt++) {
        read = await page.evaluate(async () => {
          const text = await (await fetch(`/js/app.js?attempt=${Date.now()}`)).text()
          const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)))
          return Array.from(digest, (byte) => byte.toString(16).padStart(2, '0')).join('')
        })
        if (seen.get('/js/app.js')?.contentEncoding === 'dcz') break
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
      const request = seen.get('/js/app.js')
      assert(request?.contentEncoding === 'dcz', `sent ${request?.contentEncoding}`)
      assert(read === sha256(bundle2), 'the page read other bytes than the new version')
      assert(request.wire < 4096, `${request.wire} bytes on the wire`)
      return `${bundle2.length} bytes in ${request.wire} on the wire, headers included`
    })

    await check('a response no dictionary covers comes as zstd', async () => {
      const read = await page.evaluate(async () => (await fetch('/plain')).text())
      assert(seen.get('/plain')?.contentEncoding === 'zstd', `sent ${seen.get('/plain')?.contentEncoding}`)
      assert(read === plain, 'the page read other bytes')
    })

    await check('a stream flushed event by event reaches the page event by event', async () => {
      const events = await page.evaluate(async () => {
        const reader = (await fetch('/events')).body.pipeThrough(new TextDecoderStream()).getReader()
        let text = ''
        let told = 0
        for (;;) {
          const { value, done } = await reader.read()
          if (done) return text
          text += value
          // Each complete event read: tell the server, which writes the next only then.
          while (text.split('\n\n').length - 1 > told) await fetch(`/ack?n=${told++}`)
        }
      })
      assert(seen.get('/events')?.contentEncoding === 'zstd', `sent ${seen.get('/events')?.contentEncoding}`)
      assert(events === 'data: event 0\n\ndata: event 1\n\ndata: event 2\n\n', `read ${JSON.stringify(events)}`)
      assert(unread === 0, `${unread} events reached the page only after the server had waited 5 s for them`)
    })
  } finally {
    await browser.close()
    server.close()
  }
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(failed === 0 ? 0 : 1)
}

main().catch((error) => {
  console.log(`  FAIL  ${error?.stack ?? error}`)
  console.log(`${passed} passed, ${failed + 1} failed`)
  process.exit(1)
})
