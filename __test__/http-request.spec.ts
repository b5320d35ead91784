// zstd-pool/http's request side: zstd request bodies decoded for the readers after the middleware
// (express.json, Fastify's parsers, a node:http handler), within limits, with hostile bodies.
import { randomBytes } from 'node:crypto'
import http from 'node:http'
import type net from 'node:net'
import { Writable } from 'node:stream'
import { setTimeout as delay } from 'node:timers/promises'
import zlib from 'node:zlib'
import { afterAll, describe, expect, it } from 'vitest'

import { compressSync, createCompressStream, poolStats } from 'zstd-pool'
import { decompressPayload, decompressRequest } from 'zstd-pool/http'
import { inRounds, listenLocally } from './helpers'

const records = Array.from({ length: 3000 }, (_, id) => ({ id, name: `item ${id}`, tags: ['a', 'b'] }))
const json = Buffer.from(JSON.stringify(records))

const closers: (() => unknown)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

/** The server's base URL, once it listens on 127.0.0.1. */
function listening(server: http.Server): Promise<string> {
  closers.push(() => server.close())
  return listenLocally(server)
}

interface Reply {
  status: number
  headers: http.IncomingHttpHeaders
  text: string
}

/** POSTs `chunks` (sent one by one, chunked unless `length` is given) with `headers`. */
function post(url: string, chunks: Uint8Array[], headers: Record<string, string | number>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
    })
    request.on('error', reject)
    for (const chunk of chunks) request.write(chunk)
    request.end()
  })
}

const zstdJson = { 'content-type': 'application/json', 'content-encoding': 'zstd' }

/** `data` compressed as a stream, so that its frame declares no size. */
async function streamed(data: Uint8Array, options = {}): Promise<Buffer> {
  const stream = createCompressStream(options)
  const chunks: Buffer[] = []
  stream.on('data', (chunk) => chunks.push(chunk))
  const ended = new Promise((resolve) => stream.on('end', resolve))
  for (let at = 0; at < data.length; at += 1 << 20) stream.write(data.subarray(at, at + (1 << 20)))
  stream.end()
  await ended
  return Buffer.concat(chunks)
}

/** `data` in pieces of `size` bytes. */
function pieces(data: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = []
  for (let at = 0; at < data.length; at += size) out.push(data.subarray(at, at + size))
  return out
}

async function expressApp(before: ((req: http.IncomingMessage, res: http.ServerResponse, next: () => void) => void)[] = []) {
  const { default: express } = await import('express')
  const app = express()
  for (const middleware of before) app.use(middleware)
  app.use(decompressRequest())
  app.use(express.json({ limit: '10mb' }))
  app.post('/', (req, res) => res.json({ count: req.body.length, last: req.body.at(-1), headers: req.headers }))
  app.use((error: { status?: number; code?: string; message: string }, _req: unknown, res: any, _next: unknown) =>
    res.status(error.status ?? 500).json({ code: error.code, message: error.message }),
  )
  return listening(http.createServer(app))
}

/** The hostile bodies and what each is answered with. */
async function hostile() {
  const zeros = Buffer.alloc(64 << 20)
  // A frame of unknown size declares its window: 128 MiB here.
  const wideWindow = await streamed(zeros.subarray(0, 1 << 20), { windowLog: 27 })
  const frame = compressSync(json)
  return [
    { name: 'a frame that declares 64 MiB', body: compressSync(zeros), status: 413, code: 'ERR_BUFFER_TOO_LARGE' },
    { name: 'a frame of 64 MiB with no size', body: await streamed(zeros), status: 413, code: 'ERR_BUFFER_TOO_LARGE' },
    { name: 'a 128 MiB window', body: wideWindow, status: 413, code: 'ZSTD_error_frameParameter_windowTooLarge' },
    { name: 'bytes that are not zstd', body: Buffer.from('{"not":"zstd"}'), status: 400, code: 'ZSTD_error_prefix_unknown' },
    { name: 'a truncated frame', body: frame.subarray(0, frame.length - 9), status: 400, code: 'ZSTD_error_srcSize_wrong' },
  ]
}

describe('decompressRequest() in Express', () => {
  it('gives express.json the decoded body, whether it comes in one piece or many, with or without a declared size', async () => {
    const base = await expressApp()
    for (const body of [compressSync(json), await streamed(json)]) {
      for (const chunks of [[body], pieces(body, 100)]) {
        const reply = await post(base, chunks, zstdJson)
        expect(reply.status).toBe(200)
        const { count, last, headers } = JSON.parse(reply.text)
        expect([count, last]).toEqual([records.length, records.at(-1)])
        // The request as the readers see it: no Content-Encoding, a length no longer known.
        expect(headers['content-encoding']).toBeUndefined()
        expect(headers['content-length']).toBeUndefined()
      }
    }
  })

  it('decodes concatenated and skippable frames, and leaves other codings for the parser beneath (gzip, zstd)', async () => {
    const base = await expressApp()
    const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 1, 2, 3])
    const half = json.length >> 1
    const framed = Buffer.concat([compressSync(json.subarray(0, half)), skippable, compressSync(json.subarray(half))])
    expect(JSON.parse((await post(base, [framed], zstdJson)).text).count).toBe(records.length)
    // Codings are listed in the order they were applied: zstd last, so decoded first.
    const layered = compressSync(zlib.gzipSync(json))
    const reply = await post(base, [layered], { ...zstdJson, 'content-encoding': 'gzip, zstd' })
    expect(JSON.parse(reply.text).count).toBe(records.length)
    // A body in another coding, or none, goes to the parser as it came.
    expect(JSON.parse((await post(base, [zlib.gzipSync(json)], { ...zstdJson, 'content-encoding': 'gzip' })).text).count).toBe(
      records.length,
    )
    expect(JSON.parse((await post(base, [json], { 'content-type': 'application/json' })).text).count).toBe(records.length)
  })

  it('answers 413 past maxOutputLength or windowLogMax, 400 for a body that is not zstd, and serves the next request', async () => {
    const base = await expressApp()
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
    closers.push(() => agent.destroy())
    for (const { name, body, status, code } of await hostile()) {
      for (const chunks of [[body], pieces(body, 1000)]) {
        const reply = await post(base, chunks, zstdJson)
        expect([name, reply.status, JSON.parse(reply.text).code]).toEqual([name, status, code])
      }
    }
    expect((await post(base, [compressSync(json)], zstdJson)).status).toBe(200)
  })

  it('decodes a body Node read ahead of it, whole or in part (after an asynchronous middleware)', async () => {
    const waited = (_req: unknown, _res: unknown, next: () => void) => void delay(30).then(next)
    const base = await expressApp([waited])
    expect(JSON.parse((await post(base, [compressSync(json)], zstdJson)).text).count).toBe(records.length)
    // Larger than what Node reads ahead: part of it waits in the request, the rest in the socket.
    const incompressible = compressSync(Buffer.from(JSON.stringify([randomBytes(400_000).toString('hex')])))
    expect(incompressible.length).toBeGreaterThan(256 << 10)
    expect(JSON.parse((await post(base, [incompressible], zstdJson)).text).count).toBe(1)
    for (const { name, body, status, code } of await hostile()) {
      if (body.length > 16_000) continue // more than Node reads ahead of an unread request
      const reply = await post(base, [body], zstdJson)
      expect([name, reply.status, JSON.parse(reply.text).code]).toEqual([name, status, code])
    }
  })
})

describe('decompressRequest() with node:http', () => {
  /** A server whose handler reads the request with `read`, behind the middleware (run `wait` ms
   * after the request came, as after an asynchronous middleware, when given). */
  function serve(read: (req: http.IncomingMessage, res: http.ServerResponse) => void, options?: object, wait?: number) {
    const middleware = decompressRequest(options)
    const run = (req: http.IncomingMessage, res: http.ServerResponse) => middleware(req, res, () => read(req, res))
    return listening(http.createServer((req, res) => (wait === undefined ? run(req, res) : setTimeout(run, wait, req, res))))
  }

  it('a handler reading with for await gets the body, or the error with its status', async () => {
    const base = await serve(async (req, res) => {
      try {
        const chunks: Buffer[] = []
        for await (const chunk of req) chunks.push(chunk)
        res.end(`${Buffer.concat(chunks).length}`)
      } catch (error: any) {
        res.statusCode = error.status
        res.end(error.code)
      }
    })
    expect((await post(base, [compressSync(json)], zstdJson)).text).toBe(`${json.length}`)
    const bomb = compressSync(Buffer.alloc(8 << 20))
    expect(await post(base, [bomb], zstdJson)).toMatchObject({ status: 413, text: 'ERR_BUFFER_TOO_LARGE' })
  })

  it("with no 'error' listener on the request, a failure closes the connection; the handler never sees an 'end'", async () => {
    let ended = 0
    const base = await serve((req, res) => {
      req.on('data', () => {})
      req.on('end', () => {
        ended++
        res.end('read')
      })
    })
    await expect(post(base, [await streamed(Buffer.alloc(8 << 20))], zstdJson)).rejects.toThrow(/socket hang up|ECONNRESET/)
    await delay(50)
    expect(ended).toBe(0)
    // The server goes on.
    expect((await post(base, [compressSync(json)], zstdJson)).text).toBe('read')
  })

  it.each([
    ['right away', undefined],
    ['after an asynchronous middleware', 30],
  ])(
    'a handler that answers without reading costs no decoding, meets no error, and keeps the connection (%s)',
    async (_when, wait) => {
      const base = await serve(
        (_req, res) => {
          // Answered later, without reading: the middleware never answers behind its back.
          setTimeout(() => {
            res.statusCode = 401
            res.end('who are you')
          }, 20)
        },
        undefined,
        wait,
      )
      const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
      closers.push(() => agent.destroy())
      const sockets = new Set()
      agent.on('free', (socket) => sockets.add(socket))
      const bodies = [compressSync(randomBytes(2 << 20)), Buffer.from('not zstd'), compressSync(Buffer.alloc(64 << 20))]
      for (const body of bodies) {
        const reply = await new Promise<Reply>((resolve, reject) => {
          const request = http.request(base, { method: 'POST', headers: zstdJson, agent }, (res) => {
            let text = ''
            res.on('data', (chunk) => (text += chunk))
            res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }))
          })
          request.on('error', reject)
          request.end(body)
        })
        expect([reply.status, reply.text]).toEqual([401, 'who are you'])
      }
      // The three requests went over one connection.
      expect(sockets.size).toBe(1)
    },
  )

  it('after an error, a piped destination is not ended: no part of a body that failed is taken for the whole', async () => {
    const outcomes: string[] = []
    const base = await serve((req, res) => {
      const sink = new Writable({ write: (_chunk, _encoding, callback) => callback() })
      sink.on('finish', () => outcomes.push('finished'))
      req.on('error', (error: any) => {
        outcomes.push(`error ${error.status}`)
        res.statusCode = error.status
        res.end()
      })
      req.pipe(sink)
    })
    const whole = compressSync(randomBytes(600_000))
    for (const body of [whole.subarray(0, whole.length - 1000), compressSync(Buffer.alloc(5 << 20))]) {
      await post(base, [body], zstdJson)
    }
    await delay(50)
    expect(outcomes).toEqual(['error 400', 'error 413'])
  })

  it('keeps backpressure: a handler that does not read holds back the decoder and the socket', async () => {
    let sizes = { buffered: 0, decoded: 0 }
    const base = await serve(
      async (req, res) => {
        await delay(300)
        const buffered = req.readableLength
        let decoded = 0
        for await (const chunk of req) decoded += chunk.length
        sizes = { buffered, decoded }
        res.end()
      },
      { maxOutputLength: 512 << 20 },
    )
    const input = Buffer.alloc(256 << 20, 'a')
    const reply = await post(base, pieces(await streamed(input), 4096), zstdJson)
    expect(reply.status).toBe(200)
    expect(sizes.decoded).toBe(input.length)
    // What waits in the request: at most the decoder's last output (1 MiB at most) on top of the
    // request's highWaterMark, of the 256 MiB the body decodes to.
    expect(sizes.buffered).toBeLessThanOrEqual((1 << 20) + (64 << 10))
  })

  it('frees the decoder of a client that goes away mid-body', async () => {
    let peak = 0
    const base = await serve((req, res) => {
      req.once('data', () => (peak = Math.max(peak, poolStats().decompressors.inUse)))
      req.resume()
      req.on('end', () => res.end())
    })
    const body = await streamed(Buffer.from('x'.repeat(1 << 22)))
    const before = poolStats().decompressors.inUse
    await inRounds(10, 50, (closed) => {
      const request = http.request(base, { method: 'POST', headers: zstdJson })
      request.on('error', () => {})
      request.on('close', closed)
      request.write(body.subarray(0, body.length >> 1), () => setImmediate(() => request.destroy()))
    })
    expect(peak).toBeGreaterThan(before)
    for (let i = 0; i < 100 && poolStats().decompressors.inUse > before; i++) await delay(20)
    expect(poolStats().decompressors.inUse).toBe(before)
  })

  it('leaves alone requests without a body or without zstd, and survives hostile Content-Encoding headers', async () => {
    const base = await serve(async (req, res) => {
      const chunks: Buffer[] = []
      try {
        for await (const chunk of req) chunks.push(chunk)
        res.end(`${req.headers['content-encoding']}|${Buffer.concat(chunks).length}`)
      } catch (error: any) {
        res.statusCode = error.status
        res.end(error.code)
      }
    })
    const frame = compressSync(json)
    const cases: [Record<string, string>, Uint8Array, string][] = [
      [{ 'content-encoding': 'ZSTD' }, frame, `undefined|${json.length}`],
      [{ 'content-encoding': 'zstd, identity' }, frame, `undefined|${json.length}`],
      [{ 'content-encoding': 'zstd, zstd' }, compressSync(frame), `zstd|${frame.length}`],
      [{ 'content-encoding': 'br' }, frame, `br|${frame.length}`],
      [{ 'content-encoding': `${'x,'.repeat(4000)}zstd` }, frame, `${'x, '.repeat(3999)}x|${json.length}`],
      [{ 'content-encoding': 'zstd', 'content-length': '0' }, new Uint8Array(0), 'undefined|0'],
      [{ 'content-encoding': 'zstd' }, new Uint8Array(0), 'undefined|0'],
    ]
    for (const [headers, data, expected] of cases) {
      expect((await post(base, [data], { ...headers })).text).toBe(expected)
    }
  })

  it("leaves HTTP/2's requests as they are (their body is read otherwise), and survives them", async () => {
    const http2 = await import('node:http2')
    const middleware = decompressRequest()
    const server = http2.createServer((req, res) =>
      middleware(req as never, res as never, () => {
        res.end(`${req.headers['content-encoding']}`)
      }),
    )
    closers.push(() => server.close())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const client = http2.connect(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}`)
    closers.push(() => client.close())
    for (const body of [compressSync(json), compressSync(Buffer.alloc(64 << 20))]) {
      const stream = client.request({ ':method': 'POST', 'content-encoding': 'zstd', 'content-length': body.length })
      stream.end(body)
      let text = ''
      stream.setEncoding('utf8')
      stream.on('data', (chunk) => (text += chunk))
      await new Promise((resolve) => stream.on('end', resolve))
      expect(text).toBe('zstd')
    }
  })

  it('checks its options when it is made', () => {
    expect(() => decompressRequest({ maxOutputLength: 0 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }))
    expect(() => decompressRequest({ windowLogMax: 40 })).toThrow(RangeError)
    expect(() => decompressRequest('fast' as never)).toThrow(TypeError)
    expect(() => decompressPayload([] as never)).toThrow(TypeError)
  })
})

describe('decompressPayload() in Fastify', () => {
  it("gives Fastify's parsers the decoded body, checks Content-Length against the encoded one, and answers errors with their status", async () => {
    const { default: Fastify } = await import('fastify')
    const app = Fastify({ bodyLimit: 10 << 20 })
    app.addHook('preParsing', decompressPayload())
    app.post('/', (request) => ({ count: (request.body as unknown[]).length }))
    await app.listen({ port: 0, host: '127.0.0.1' })
    closers.push(() => app.close())
    const base = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`
    const frame = compressSync(json)
    for (const headers of [zstdJson, { ...zstdJson, 'content-length': frame.length }]) {
      expect(JSON.parse((await post(base, pieces(frame, 500), headers)).text)).toEqual({ count: records.length })
    }
    for (const { name, body, status, code } of await hostile()) {
      const reply = await post(base, [body], { ...zstdJson, 'content-length': body.length })
      expect([name, reply.status, JSON.parse(reply.text).code]).toEqual([name, status, code])
    }
  })
})
