import { createHash } from 'node:crypto'
import http from 'node:http'
import net from 'node:net'
import { Readable } from 'node:stream'
import zlib from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'

import { createDecompressStream, Dictionary, decompressSync, frameInfo, poolStats, trainDictionarySync } from 'zstd-pool'
import { compressible, compression } from 'zstd-pool/http'
import { corpus, inRounds, listenLocally } from './helpers'

// The negotiation is a module of plain functions; the middleware's tests go through node:http.
const { acceptedCodings, chooseEncoding } = require('../lib/negotiate.js')

const text = corpus.find(({ name }) => /\.(txt|json|html|csv)$/.test(name))?.data ?? corpus[0].data
const body = text.subarray(0, 200_000)

type Handler = (req: http.IncomingMessage, res: http.ServerResponse & { flush(): void }) => void

const servers: http.Server[] = []
afterAll(() => {
  for (const server of servers) server.close()
})

/** A node:http server on 127.0.0.1 that runs `handler` behind the middleware; its base URL. */
async function serve(handler: Handler, options?: Parameters<typeof compression>[0]): Promise<string> {
  const middleware = compression(options)
  const server = http.createServer((req, res) => middleware(req, res, () => handler(req, res as never)))
  servers.push(server)
  return listenLocally(server)
}

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  raw: Buffer
  body: Buffer
}

/** GET (or `method`) `url` with `headers`; the body as sent, and decoded as its Content-Encoding says. */
function get(url: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk) => chunks.push(chunk))
      res.on('end', () => {
        const raw = Buffer.concat(chunks)
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, body: decoded(raw, res.headers['content-encoding']) })
      })
      res.on('error', reject)
    })
    request.on('error', reject)
    request.end()
  })
}

function decoded(raw: Buffer, encoding: string | undefined): Buffer {
  if (encoding === 'zstd') return decompressSync(raw)
  if (encoding === 'br') return zlib.brotliDecompressSync(raw)
  if (encoding === 'gzip') return zlib.gunzipSync(raw)
  return raw
}

const sendText: Handler = (_req, res) => {
  res.setHeader('Content-Type', 'text/plain; charset=utf-8')
  res.end(body)
}

describe('Accept-Encoding negotiation', () => {
  it('reads codings and q-values as RFC 9110 writes them, skipping what does not parse', () => {
    expect([...acceptedCodings('gzip, deflate, br, zstd')]).toEqual([
      ['gzip', 1],
      ['deflate', 1],
      ['br', 1],
      ['zstd', 1],
    ])
    expect([...acceptedCodings(' ZSTD ; Q=0.5 ,br;q=1.000, gzip;q=0, x;q=1.5, y;q=0.1234, z;q=, ;q=1, é, *')]).toEqual([
      ['zstd', 0.5],
      ['br', 1],
      ['gzip', 0],
      ['*', 1],
    ])
    // A coding named twice keeps its first rating; repeated headers (an array) are one list.
    expect([...acceptedCodings(['zstd;q=0.2', 'zstd, br'])]).toEqual([
      ['zstd', 0.2],
      ['br', 1],
    ])
    expect(acceptedCodings(undefined).size).toBe(0)
  })

  it('chooses what the client rates highest, then what the server prefers, and identity when nothing else may go', () => {
    const offered = ['zstd', 'br', 'gzip']
    const cases: [string | undefined, string][] = [
      ['gzip, deflate, br, zstd', 'zstd'], // Chrome 123+, Firefox 126+
      ['gzip, deflate, br', 'br'], // Safari before 26.3
      ['gzip', 'gzip'],
      [undefined, 'identity'],
      ['', 'identity'],
      ['zstd;q=0.5, br;q=0.9', 'br'],
      ['zstd;q=0, gzip', 'gzip'],
      ['*', 'zstd'],
      ['*;q=0', 'identity'],
      ['*;q=0, gzip', 'gzip'],
      ['identity;q=1, zstd;q=0.5', 'identity'],
      ['identity;q=0.5, zstd;q=0.5', 'zstd'],
      ['identity;q=0', 'identity'],
      ['deflate, compress', 'identity'],
      ['gzip;q=0.5', 'gzip'],
    ]
    for (const [header, expected] of cases) expect(chooseEncoding(header, offered), String(header)).toBe(expected)
    expect(chooseEncoding('gzip, br, zstd', ['gzip', 'zstd'])).toBe('gzip')
  })

  it('reads a huge or hostile header whole, in one pass, and never throws', () => {
    // A server may take headers far past Node's default 16 KiB (maxHeaderSize): 200,000 codings.
    const huge = Array.from({ length: 200_000 }, (_, i) => `c${i};q=0.${i % 1000}`).join(', ')
    expect(chooseEncoding(`${huge}, zstd`, ['zstd'])).toBe('zstd')
    // A refusal at the end of a long header is a refusal.
    expect(chooseEncoding(`*, ${huge}, zstd;q=0, br;q=0`, ['zstd', 'br', 'gzip'])).toBe('gzip')
    expect(chooseEncoding('zstd;q=0;q=1, x-gzip', ['zstd', 'gzip'])).toBe('gzip')
    for (const hostile of [
      ';;;,,,',
      'q=1',
      'zstd;q=1;q=0',
      'zstd;q',
      '\u0000zstd',
      'zstd\u00e9',
      'zstd;q=0.5=1',
      ','.repeat(1e5),
    ]) {
      expect(() => chooseEncoding(hostile, ['zstd', 'gzip'])).not.toThrow()
    }
  })
})

describe('compression() with node:http', () => {
  it('answers zstd, br, gzip or identity as the request allows, with the same body', async () => {
    const base = await serve(sendText)
    for (const [accept, encoding] of [
      ['gzip, deflate, br, zstd', 'zstd'],
      ['gzip, deflate, br', 'br'],
      ['gzip', 'gzip'],
      ['', undefined],
    ] as const) {
      const reply = await get(base, { 'accept-encoding': accept })
      expect(reply.headers['content-encoding'], accept).toBe(encoding)
      expect(reply.headers.vary).toBe('Accept-Encoding')
      expect(reply.body.equals(body)).toBe(true)
      if (encoding) {
        expect(reply.headers['content-length']).toBeUndefined()
        expect(reply.raw.length).toBeLessThan(body.length / 2)
      } else {
        expect(reply.headers['content-length']).toBe(String(body.length))
      }
    }
  })

  it('encodes a body given whole to end() in every form end() takes', async () => {
    const base = await serve((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' })
      const form = req.url?.slice(1)
      const done = () => {}
      if (form === 'callback') res.end(done)
      else if (form === 'empty') res.end()
      else if (form === 'latin1') res.end(body.toString('latin1'), 'latin1', done)
      else if (form === 'view') res.end(new Uint8Array(body.buffer, body.byteOffset + 10, 5000), done)
      else res.end(body.toString('utf8'), done)
    })
    const expected: Record<string, Buffer> = {
      callback: Buffer.alloc(0),
      empty: Buffer.alloc(0),
      latin1: body,
      view: body.subarray(10, 5010),
      string: Buffer.from(body.toString('utf8')),
    }
    for (const [form, bytes] of Object.entries(expected)) {
      for (const accept of ['zstd', 'br', 'gzip']) {
        const reply = await get(`${base}/${form}`, { 'accept-encoding': accept })
        expect([reply.headers['content-encoding'], reply.body.equals(bytes)], `${form} ${accept}`).toEqual([accept, true])
      }
    }
  })

  it('offers the codings of options.encodings, in its order', async () => {
    const base = await serve(sendText, { encodings: ['gzip', 'zstd'] })
    expect((await get(base, { 'accept-encoding': 'zstd, gzip, br' })).headers['content-encoding']).toBe('gzip')
    expect((await get(base, { 'accept-encoding': 'br' })).headers['content-encoding']).toBeUndefined()
  })

  it('leaves alone HEAD, 204 and 304, no-transform, encoded bodies, small bodies and types that do not compress', async () => {
    const base = await serve((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x')
      const type = url.searchParams.get('type') ?? 'text/plain'
      res.setHeader('Content-Type', type)
      const status = Number(url.searchParams.get('status') ?? 200)
      if (url.searchParams.has('cache')) res.setHeader('Cache-Control', url.searchParams.get('cache') as string)
      if (url.searchParams.has('encoded')) {
        res.setHeader('Content-Encoding', 'gzip')
        res.end(zlib.gzipSync(body))
        return
      }
      if (url.searchParams.has('length')) {
        const length = Number(url.searchParams.get('length'))
        res.writeHead(status, { 'Content-Length': length })
        res.end(body.subarray(0, length))
        return
      }
      res.statusCode = status
      res.end(
        status === 204 || status === 304 ? undefined : body.subarray(0, Number(url.searchParams.get('size') ?? body.length)),
      )
    })
    const accept = { 'accept-encoding': 'zstd' }
    const plain = async (path: string, method = 'GET') => (await get(base + path, accept, method)).headers['content-encoding']
    expect(await plain('/')).toBe('zstd')
    expect(await plain('/', 'HEAD')).toBeUndefined()
    expect(await plain('/?status=204')).toBeUndefined()
    expect(await plain('/?status=304')).toBeUndefined()
    expect(await plain('/?cache=public,%20no-transform')).toBeUndefined()
    expect(await plain('/?encoded')).toBe('gzip')
    expect(await plain('/?type=image/png')).toBeUndefined()
    expect(await plain('/?type=application/json')).toBe('zstd')
    expect(await plain('/?type=image/svg%2Bxml')).toBe('zstd')
    expect(await plain('/?type=application/vnd.api%2Bjson')).toBe('zstd')
    expect(await plain('/?size=1023')).toBeUndefined()
    expect(await plain('/?size=1024')).toBe('zstd')
    expect(await plain('/?length=500')).toBeUndefined()
    const whole = await get(`${base}/?length=5000`, accept)
    expect(whole.headers['content-encoding']).toBe('zstd')
    expect(whole.body.equals(body.subarray(0, 5000))).toBe(true)
  })

  it('takes headers given to writeHead, keeps Vary as it is, and compresses what the filter says', async () => {
    const base = await serve(
      (_req, res) => {
        res.setHeader('Vary', 'Origin')
        res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'X-Zip': 'yes' })
        res.end(body)
      },
      { filter: (_req, res) => res.getHeader('X-Zip') === 'yes' || compressible(_req, res) },
    )
    const reply = await get(base, { 'accept-encoding': 'zstd' })
    expect(reply.headers['content-encoding']).toBe('zstd')
    expect(reply.headers.vary).toBe('Origin, Accept-Encoding')
    expect(reply.body.equals(body)).toBe(true)
  })

  it('streams: flush() sends each event to the client before the response ends', async () => {
    let next: () => void = () => {}
    const base = await serve(async (_req, res) => {
      res.setHeader('Content-Type', 'text/event-stream')
      for (let i = 0; i < 3; i++) {
        const acknowledged = new Promise<void>((resolve) => (next = resolve))
        res.write(`data: event ${i}\n\n`)
        res.flush()
        await acknowledged
      }
      res.end()
    })
    const events: string[] = []
    await new Promise<void>((resolve, reject) => {
      http.get(base, { headers: { 'accept-encoding': 'zstd' } }, (res) => {
        expect(res.headers['content-encoding']).toBe('zstd')
        const decoder = createDecompressStream()
        res.pipe(decoder)
        decoder.on('data', (chunk: Buffer) => {
          events.push(chunk.toString())
          // The server waits for this before it writes the next event: without the flush, the
          // event would sit in the encoder and this would never run.
          next()
        })
        decoder.on('end', resolve)
        decoder.on('error', reject)
      })
    })
    expect(events.join('')).toBe('data: event 0\n\ndata: event 1\n\ndata: event 2\n\n')
  })

  it("keeps backpressure: write() returns false when the encoder is full, and 'drain' comes", async () => {
    const large = Buffer.concat(Array.from({ length: 40 }, () => body))
    let sawFalse = false
    let drains = 0
    const base = await serve((_req, res) => {
      res.setHeader('Content-Type', 'text/plain')
      res.on('drain', () => drains++)
      let at = 0
      const pump = () => {
        while (at < large.length) {
          const ok = res.write(large.subarray(at, at + 65536))
          at += 65536
          if (!ok) {
            sawFalse = true
            res.once('drain', pump)
            return
          }
        }
        res.end()
      }
      pump()
    })
    const reply = await get(base, { 'accept-encoding': 'zstd' })
    expect(reply.body.equals(large)).toBe(true)
    expect(sawFalse).toBe(true)
    expect(drains).toBeGreaterThan(0)
  })

  it('compresses a stream piped into the response', async () => {
    const large = Buffer.concat(Array.from({ length: 20 }, () => body))
    const base = await serve((_req, res) => {
      res.setHeader('Content-Type', 'application/json')
      Readable.from(
        (function* chunks() {
          for (let at = 0; at < large.length; at += 10_000) yield large.subarray(at, at + 10_000)
        })(),
      ).pipe(res)
    })
    for (const accept of ['zstd', 'br', 'gzip']) {
      const reply = await get(base, { 'accept-encoding': accept })
      expect(reply.headers['content-encoding']).toBe(accept)
      expect(reply.body.equals(large)).toBe(true)
    }
  })

  it('frees the encoder of a client that goes away mid-response', async () => {
    const base = await serve((_req, res) => {
      res.setHeader('Content-Type', 'text/plain')
      res.write(body)
      res.flush()
      // Never ends: the client leaves.
    })
    const before = poolStats().compressors.inUse
    await inRounds(10, 50, (closed) => {
      const request = http.get(base, { headers: { 'accept-encoding': 'zstd' } }, (res) => {
        res.once('data', () => request.destroy())
      })
      request.on('close', closed)
      request.on('error', () => {})
    })
    // The server sees each close a little after the client.
    for (let i = 0; i < 100 && poolStats().compressors.inUse > before; i++) await new Promise((r) => setTimeout(r, 20))
    expect(poolStats().compressors.inUse).toBe(before)
  })

  it('survives end() twice, write() after end() and a handler that fails after the headers went', async () => {
    let writeError: unknown
    const base = await serve((req, res) => {
      res.setHeader('Content-Type', 'text/plain')
      if (req.url === '/twice') {
        res.end(body)
        res.end(body)
        res.write('more', (error) => (writeError = error))
        return
      }
      res.write(body.subarray(0, 5000))
      res.flush()
      setImmediate(() => res.destroy(new Error('the handler failed')))
    })
    const reply = await get(`${base}/twice`, { 'accept-encoding': 'zstd' })
    expect(reply.body.equals(body)).toBe(true)
    expect(writeError).toMatchObject({ code: 'ERR_STREAM_WRITE_AFTER_END' })
    await expect(get(`${base}/fails`, { 'accept-encoding': 'zstd' })).rejects.toThrow()
    expect((await get(`${base}/twice`, { 'accept-encoding': 'zstd' })).body.equals(body)).toBe(true)
  })

  it('answers hostile Accept-Encoding headers (huge, repeated, not ASCII) without failing', async () => {
    const base = await serve(sendText)
    const { port } = new URL(base)
    const raw = (lines: string[]) =>
      new Promise<string>((resolve, reject) => {
        const socket = net.connect(Number(port), '127.0.0.1', () => {
          // Not end(): a client that half-closes its side is one Node's server stops answering.
          socket.write(`GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${lines.join('\r\n')}\r\n\r\n`, 'latin1')
        })
        const chunks: Buffer[] = []
        socket.on('data', (chunk) => chunks.push(chunk))
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')))
        socket.on('error', reject)
      })
    const statusAndEncoding = (response: string) => [
      response.slice(9, 12),
      /\r\ncontent-encoding: (\S+)/i.exec(response.split('\r\n\r\n')[0])?.[1],
    ]
    // About 14 KB: Node refuses request headers past 16 KiB (431) before any handler runs.
    const qvalues = Array.from({ length: 1800 }, (_, i) => `x;q=0.${i % 10}`).join(',')
    expect(statusAndEncoding(await raw([`Accept-Encoding: ${qvalues}, zstd`]))).toEqual(['200', 'zstd'])
    expect(statusAndEncoding(await raw([`Accept-Encoding: *, ${qvalues}, zstd;q=0, br;q=0`]))).toEqual(['200', 'gzip'])
    expect(statusAndEncoding(await raw(['Accept-Encoding: br', 'Accept-Encoding: zstd;q=0.5']))).toEqual(['200', 'br'])
    expect(statusAndEncoding(await raw(['Accept-Encoding: zst\u00e9, gzip\u00ff, zstd']))).toEqual(['200', 'zstd'])
    expect(statusAndEncoding(await raw(['Accept-Encoding: ;;;;,,,;q=;q=1,q']))).toEqual(['200', undefined])
  })

  it('leaves ranges alone, weakens a strong ETag it encodes, and gives a 304 the Vary of its 200', async () => {
    const base = await serve((req, res) => {
      res.setHeader('Content-Type', 'text/plain')
      res.setHeader('ETag', '"v1"')
      if (req.url === '/range') {
        res.writeHead(206, { 'Content-Range': `bytes 0-4999/${body.length}` })
        res.end(body.subarray(0, 5000))
      } else if (req.url === '/not-modified') {
        res.statusCode = 304
        res.end()
      } else {
        res.end(body)
      }
    })
    const accept = { 'accept-encoding': 'zstd' }
    const range = await get(`${base}/range`, accept)
    expect([range.status, range.headers['content-encoding'], range.body.equals(body.subarray(0, 5000))]).toEqual([
      206,
      undefined,
      true,
    ])
    const whole = await get(base, accept)
    expect([whole.headers['content-encoding'], whole.headers.etag]).toEqual(['zstd', 'W/"v1"'])
    expect((await get(base)).headers.etag).toBe('"v1"')
    const notModified = await get(`${base}/not-modified`, accept)
    expect([notModified.status, notModified.headers.vary]).toEqual([304, 'Accept-Encoding'])
  })

  it("commits an encoded response's headers at its first write, as Node does, and keeps repeated headers", async () => {
    const seen: unknown[] = []
    const base = await serve((_req, res) => {
      res.writeHead(200, ['Content-Type', 'text/plain', 'Set-Cookie', 'a=1', 'Set-Cookie', 'b=2'])
      res.write(body.subarray(0, 3000))
      seen.push(res.headersSent)
      try {
        res.setHeader('X-Late', '1')
      } catch (error) {
        seen.push((error as NodeJS.ErrnoException).code)
      }
      res.end(body.subarray(3000))
      seen.push(res.writableEnded)
      // Flushing an ended response does nothing.
      res.flush()
    })
    const reply = await get(base, { 'accept-encoding': 'zstd' })
    expect(reply.headers['set-cookie']).toEqual(['a=1', 'b=2'])
    expect(reply.body.equals(body)).toBe(true)
    expect(seen).toEqual([true, 'ERR_HTTP_HEADERS_SENT', true])
  })

  it("'drain' listeners behave as on any response: added before the first write, once, removed", async () => {
    const large = Buffer.concat(Array.from({ length: 30 }, () => body))
    let most = 0
    const base = await serve((_req, res) => {
      res.setHeader('Content-Type', 'text/plain')
      const never = () => {
        throw new Error('a removed listener ran')
      }
      res.on('drain', never)
      res.off('drain', never)
      let at = 0
      const pump = () => {
        while (at < large.length) {
          const ok = res.write(large.subarray(at, at + 65536))
          at += 65536
          most = Math.max(most, res.listenerCount('drain'))
          if (!ok) return void res.once('drain', pump)
        }
        res.end()
      }
      pump()
    })
    // Encoded, and not: a listener added before the response knew which must still be called.
    for (const accept of ['zstd', '']) expect((await get(base, { 'accept-encoding': accept })).body.equals(large)).toBe(true)
    expect(most).toBeLessThanOrEqual(3)
  })

  it('checks its options when it is made', () => {
    expect(() => compression({ encodings: ['zstd', 'deflate'] as never })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
    expect(() => compression({ encodings: [] })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => compression({ threshold: -1 })).toThrowError(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => compression({ filter: 'text' as never })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
    expect(() => compression({ zstd: { level: 99 } })).toThrowError(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => compression({ gzip: { level: 99 } })).toThrowError(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => compression({ brotli: { chunkSize: 1 } })).toThrowError(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => compression(7 as never)).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })
})

describe('compression() with dictionaries (RFC 9842)', () => {
  // A deploy's old and new version of one resource: the old one is the dictionary.
  const record = (i: number, version: number) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'], version: i === 77 ? version : 1 })
  const v1 = Buffer.from(JSON.stringify(Array.from({ length: 2000 }, (_, i) => record(i, 1))))
  const v2 = Buffer.from(JSON.stringify(Array.from({ length: 2000 }, (_, i) => record(i, 2))))
  const available = `:${createHash('sha256').update(v1).digest('base64')}:`
  const dictionaries = [{ path: '/dictionaries/api-v1', match: '/api/*', data: v1, id: 'api-v1', type: 'application/json' }]
  const sendV2: Handler = (_req, res) => {
    res.setHeader('Content-Type', 'application/json')
    res.end(v2)
  }

  it('serves the dictionary at its path, marked with Use-As-Dictionary and cacheable', async () => {
    const base = await serve(sendV2, { dictionaries })
    const reply = await get(`${base}/dictionaries/api-v1`, { 'accept-encoding': 'zstd' })
    expect(reply.headers['use-as-dictionary']).toBe('match="/api/*", id="api-v1"')
    // An id is an sf-string: quotes and backslashes escaped.
    const quoted = await serve(sendV2, { dictionaries: [{ ...dictionaries[0], id: 'a"b\\c' }] })
    expect((await get(`${quoted}/dictionaries/api-v1`)).headers['use-as-dictionary']).toBe('match="/api/*", id="a\\"b\\\\c"')
    expect(reply.headers['cache-control']).toBe('public, max-age=604800')
    expect(reply.body.equals(v1)).toBe(true)
  })

  it('answers dcz to a request that holds the dictionary: its hash, then a frame made against it', async () => {
    const base = await serve(sendV2, { dictionaries })
    const reply = await get(`${base}/api/items?page=1`, {
      'accept-encoding': 'gzip, deflate, br, zstd, dcb, dcz',
      'available-dictionary': available,
    })
    expect(reply.headers['content-encoding']).toBe('dcz')
    expect(reply.headers.vary).toBe('Accept-Encoding, Available-Dictionary')
    expect(reply.raw.subarray(0, 8).toString('hex')).toBe('5e2a4d1820000000')
    expect(reply.raw.subarray(8, 40).equals(createHash('sha256').update(v1).digest())).toBe(true)
    // The frame decodes against the dictionary's raw bytes, as a browser takes them.
    expect(decompressSync(reply.raw.subarray(40), { prefix: v1 }).equals(v2)).toBe(true)
    const zstd = await get(`${base}/api/items`, { 'accept-encoding': 'zstd' })
    expect(reply.raw.length).toBeLessThan(zstd.raw.length / 10)
  })

  it('answers a malformed, unknown or misplaced Available-Dictionary as if there were none', async () => {
    const base = await serve(sendV2, { dictionaries })
    const accept = 'zstd, dcz'
    for (const [path, header] of [
      ['/api/items', ':AAAA:'],
      ['/api/items', available.slice(1)],
      ['/api/items', `${available}, ${available}`],
      ['/api/items', 'x'.repeat(10_000)],
      ['/other', available],
    ]) {
      const reply = await get(base + path, { 'accept-encoding': accept, 'available-dictionary': header })
      expect([reply.status, reply.headers['content-encoding']], `${path} ${header.slice(0, 20)}`).toEqual([200, 'zstd'])
      expect(reply.body.equals(v2)).toBe(true)
    }
    // Holding the dictionary but not accepting dcz: zstd.
    const reply = await get(`${base}/api/items`, { 'accept-encoding': 'zstd', 'available-dictionary': available })
    expect(reply.headers['content-encoding']).toBe('zstd')
  })

  it('keeps windows within what browsers decode: 8 MB for zstd, and what RFC 9842 allows for dcz', async () => {
    const base = await serve(sendV2, { dictionaries, zstd: { level: 22 } })
    const zstd = await get(`${base}/api/items`, { 'accept-encoding': 'zstd' })
    const dcz = await get(`${base}/api/items`, { 'accept-encoding': 'zstd, dcz', 'available-dictionary': available })
    for (const frame of [zstd.raw, dcz.raw.subarray(40)])
      expect(frameInfo(frame).frames[0].windowSize).toBeLessThanOrEqual(8 << 20)
    expect(decompressSync(dcz.raw.subarray(40), { prefix: v1 }).equals(v2)).toBe(true)
  })

  it('against a dictionary larger than the window, sends a whole body as patch-from, within the window RFC 9842 allows', async () => {
    let seed = 3
    const letters = (length: number) =>
      Buffer.from(
        Array.from({ length }, () => {
          seed = (seed * 1103515245 + 12345) & 0x7fffffff
          return 97 + (seed % 26)
        }),
      )
    for (const size of [3 << 20, 9 << 20]) {
      const old = letters(size)
      const next = Buffer.concat([old.subarray(0, size >> 1), Buffer.from('/* new */'), old.subarray((size >> 1) + 9)])
      const hash = `:${createHash('sha256').update(old).digest('base64')}:`
      const base = await serve(
        (req, res) => {
          res.setHeader('Content-Type', 'text/javascript')
          if (req.url === '/js/whole.js') res.end(next)
          else {
            res.write(next.subarray(0, 1000))
            res.end(next.subarray(1000))
          }
        },
        { dictionaries: [{ path: '/dictionaries/bundle', match: '/js/*', data: old }] },
      )
      const headers = { 'accept-encoding': 'zstd, dcz', 'available-dictionary': hash }
      const whole = await get(`${base}/js/whole.js`, headers)
      const parts = await get(`${base}/js/parts.js`, headers)
      for (const reply of [whole, parts]) {
        expect(reply.headers['content-encoding']).toBe('dcz')
        const frame = reply.raw.subarray(40)
        // The larger of 8 MB and 1.25 times the dictionary, as a power of two.
        expect(frameInfo(frame).frames[0].windowSize).toBeLessThanOrEqual(2 ** Math.max(23, Math.floor(Math.log2(size * 1.25))))
        expect(decompressSync(frame, { prefix: old, windowLogMax: 27 }).equals(next)).toBe(true)
      }
      // Random letters: 5 bits of 8 are information, so plain zstd makes about 60% of the size.
      expect(whole.raw.length).toBeLessThan(2048)
    }
  })

  it("offers dcz where it offers zstd, gives a 304 its 200's Vary, and validates the dictionary by its hash", async () => {
    const base = await serve(
      (req, res) => {
        res.setHeader('Content-Type', 'application/json')
        if (req.headers['if-none-match'] === '"v2"') {
          res.statusCode = 304
          return res.end()
        }
        res.setHeader('ETag', '"v2"')
        res.end(v2)
      },
      { dictionaries },
    )
    const headers = { 'accept-encoding': 'gzip, zstd, dcz', 'available-dictionary': available }
    const notModified = await get(`${base}/api/items`, { ...headers, 'if-none-match': '"v2"' })
    expect([notModified.status, notModified.headers.vary]).toEqual([304, 'Accept-Encoding, Available-Dictionary'])
    const gzipOnly = await serve(sendV2, { dictionaries, encodings: ['gzip'] })
    expect((await get(`${gzipOnly}/api/items`, headers)).headers['content-encoding']).toBe('gzip')
    // A proxy's absolute-form request target names the same path.
    const { port } = new URL(base)
    const absolute = await new Promise<string | undefined>((resolve, reject) => {
      const socket = net.connect(Number(port), '127.0.0.1', () =>
        socket.write(
          `GET http://127.0.0.1:${port}/api/items HTTP/1.1\r\nHost: x\r\nConnection: close\r\n` +
            `Accept-Encoding: dcz\r\nAvailable-Dictionary: ${available}\r\n\r\n`,
        ),
      )
      const chunks: Buffer[] = []
      socket.on('data', (chunk) => chunks.push(chunk))
      socket.on('end', () => resolve(/\r\ncontent-encoding: (\S+)/i.exec(Buffer.concat(chunks).toString('latin1'))?.[1]))
      socket.on('error', reject)
    })
    expect(absolute).toBe('dcz')
    const dictionary = await get(`${base}/dictionaries/api-v1`)
    expect(dictionary.headers.etag).toBe(`"sha-256:${available.slice(1, -1)}"`)
    const again = await get(`${base}/dictionaries/api-v1`, { 'if-none-match': dictionary.headers.etag as string })
    expect([again.status, again.raw.length]).toEqual([304, 0])
  })

  it('checks the dictionaries when the middleware is made', () => {
    const bad = (entry: object) => () => compression({ dictionaries: [{ ...dictionaries[0], ...entry }] })
    expect(bad({ path: 'relative' })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    // URLPattern syntax the browser would read otherwise, characters no header may carry, a pattern too long.
    for (const match of ['/api/:name', '/a+b', '/x?v=*', '/a#b', '/a b', '/caf\u00e9', '/a\u0001', `/${'a'.repeat(1024)}`]) {
      expect(bad({ match }), match).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    }
    expect(bad({ id: 'caf\u00e9' })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(bad({ data: Buffer.alloc(0) })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    // A trained zstd dictionary (it begins with zstd's dictionary magic) is not raw content.
    const trained = trainDictionarySync(
      Array.from({ length: 400 }, (_, i) => JSON.stringify(record(i, 1))),
      { size: 4096 },
    )
    expect(bad({ data: trained })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    // With its ID zeroed, libzstd would still read it as a trained dictionary, and browsers as raw bytes.
    const zeroed = Buffer.from(trained)
    zeroed.fill(0, 4, 8)
    expect(bad({ data: zeroed })).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }))
    expect(() => compression({ dictionaries: {} as never })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }),
    )
    expect(() => compression({ zstd: { dictionary: new Dictionary(v1) } })).toThrowError(
      expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }),
    )
  })
})

describe('compression() in Express and Fastify', () => {
  const records = { items: Array.from({ length: 500 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] })) }

  /** The responses every framework gives: text, JSON, a stream, and a small body. */
  async function checkApp(base: string) {
    for (const accept of ['zstd', 'br', 'gzip']) {
      const textReply = await get(`${base}/text`, { 'accept-encoding': accept })
      expect(textReply.headers['content-encoding']).toBe(accept)
      expect(textReply.body.equals(body)).toBe(true)
    }
    const json = await get(`${base}/json`, { 'accept-encoding': 'gzip, deflate, br, zstd' })
    expect(json.headers['content-encoding']).toBe('zstd')
    expect(json.headers.vary).toMatch(/Accept-Encoding/)
    expect(JSON.parse(json.body.toString())).toEqual(records)
    const streamed = await get(`${base}/stream`, { 'accept-encoding': 'zstd' })
    expect(streamed.headers['content-encoding']).toBe('zstd')
    expect(streamed.body.equals(body)).toBe(true)
    const small = await get(`${base}/small`, { 'accept-encoding': 'zstd' })
    expect(small.headers['content-encoding']).toBeUndefined()
    expect(small.body.toString()).toBe('small')
    const head = await get(`${base}/text`, { 'accept-encoding': 'zstd' }, 'HEAD')
    expect(head.headers['content-encoding']).toBeUndefined()
  }

  it('Express: app.use(compression())', async () => {
    const { default: express } = await import('express')
    const app = express()
    app.use(compression())
    app.get('/text', (_req, res) => res.type('text').send(body))
    app.get('/json', (_req, res) => res.json(records))
    app.get('/stream', (_req, res) => {
      res.type('text')
      Readable.from([body.subarray(0, 1000), body.subarray(1000)]).pipe(res)
    })
    app.get('/small', (_req, res) => res.type('text').send('small'))
    const server = app.listen(0, '127.0.0.1')
    servers.push(server)
    await new Promise((resolve) => server.once('listening', resolve))
    await checkApp(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`)
  })

  it("Fastify: the middleware in an onRequest hook, on Fastify's raw request and response", async () => {
    const { default: Fastify } = await import('fastify')
    const app = Fastify()
    const middleware = compression()
    app.addHook('onRequest', (request, reply, done) => middleware(request.raw, reply.raw, done))
    app.get('/text', (_request, reply) => reply.type('text/plain').send(body))
    app.get('/json', () => records)
    app.get('/stream', (_request, reply) =>
      reply.type('text/plain').send(Readable.from([body.subarray(0, 1000), body.subarray(1000)])),
    )
    app.get('/small', (_request, reply) => reply.type('text/plain').send('small'))
    await app.listen({ port: 0, host: '127.0.0.1' })
    try {
      await checkApp(`http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`)
    } finally {
      await app.close()
    }
  })
})
