import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createServer, get } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { describe, expect, it } from 'vitest'

import {
  compressSync,
  createCompressStream,
  createDecompressStream,
  Dictionary,
  decompressSync,
  poolStats,
  trainDictionarySync,
  ZstdCompressionStream,
  ZstdDecompressionStream,
} from 'zstd-pool'
import {
  corpus,
  corpusFile,
  jsonRecords,
  rleBomb,
  skippableFrame,
  skipWithoutZstdCli,
  textOfLength,
  through,
  zstdPiped,
} from './helpers'

declare const gc: () => void

describe('createCompressStream and createDecompressStream', () => {
  it.each([1000, 1 << 20])('round-trip every corpus file in chunks of %i bytes', async (size) => {
    for (const { name, data } of corpus) {
      const frame = await through(createCompressStream({ level: 3 }), data, size)
      expect(decompressSync(frame).equals(data), name).toBe(true)
      expect((await through(createDecompressStream(), frame, size)).equals(data), name).toBe(true)
    }
  })

  it('round-trip a file fed one byte at a time', async () => {
    const data = corpusFile('html').subarray(0, 4000)
    const frame = await through(createCompressStream(), data, 1)
    expect((await through(createDecompressStream(), frame, 1)).equals(data)).toBe(true)
  })

  it('decompress concatenated, skippable and size-less frames', async () => {
    const [a, b] = [corpusFile('html'), corpusFile('urls.10K')]
    const input = Buffer.concat([
      compressSync(a),
      skippableFrame(Buffer.from('meta')),
      await through(createCompressStream(), b, 65536),
    ])
    expect((await through(createDecompressStream(), input, 7777)).equals(Buffer.concat([a, b]))).toBe(true)
  })

  it('compress and decompress with a dictionary', async () => {
    const records = jsonRecords(3000)
    const dictionary = new Dictionary(trainDictionarySync(records, { size: 8192 }))
    const data = Buffer.concat(records.slice(0, 50))
    const frame = await through(createCompressStream({ dictionary }), data, 300)
    expect(decompressSync(frame, { dictionary }).equals(data)).toBe(true)
    expect((await through(createDecompressStream({ dictionary }), frame, 100)).equals(data)).toBe(true)
    await expect(through(createDecompressStream(), frame, 100)).rejects.toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_dictionary_wrong' }),
    )
  })

  it('record pledgedSize in the frame header', async () => {
    const data = corpusFile('alice29.txt')
    const frame = await through(createCompressStream({ pledgedSize: data.length }), data, 10000)
    expect(frame[4] >> 6).toBeGreaterThan(0) // a content size field is present
    expect(decompressSync(frame).equals(data)).toBe(true)
    await expect(through(createCompressStream({ pledgedSize: 10 }), data, 10000)).rejects.toThrow(/zstd/)
  })

  it('flush() emits everything written so far as decodable data', async () => {
    const compressor = createCompressStream()
    const decompressor = createDecompressStream()
    const received: Buffer[] = []
    compressor.pipe(decompressor).on('data', (chunk: Buffer) => received.push(chunk))
    const part = Buffer.from('a message that must reach the other side now')
    compressor.write(part)
    await new Promise<void>((resolve) => compressor.flush(() => resolve()))
    for (let i = 0; i < 50 && Buffer.concat(received).length < part.length; i++)
      await new Promise((resolve) => setTimeout(resolve, 10))
    expect(Buffer.concat(received).equals(part)).toBe(true)
    compressor.end()
  })

  it('fail the stream with a clear error on corrupt or truncated input', async () => {
    const frame = compressSync(corpusFile('lcet10.txt'))
    await expect(through(createDecompressStream(), frame.subarray(0, frame.length - 10), 4096)).rejects.toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_srcSize_wrong' }),
    )
    await expect(through(createDecompressStream(), Buffer.from('not zstd at all'), 4)).rejects.toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_prefix_unknown' }),
    )
    await expect(
      through(createDecompressStream(), frame, 4096).then(() => through(createDecompressStream(), Buffer.alloc(0), 1)),
    ).rejects.toThrow()
  })

  it('fail on a frame that ends short of the size it declares, however it is cut into chunks', async () => {
    const short = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 200, 0, 0, 0, 100 << 3, 0, 0]),
      Buffer.alloc(100, 'a'),
      Buffer.from([1, 0, 0]),
    ])
    for (const size of [1, 6, 50, short.length]) {
      await expect(through(createDecompressStream(), short, size)).rejects.toThrowError(
        expect.objectContaining({ code: 'ZSTD_error_corruption_detected' }),
      )
    }
  })

  it('honour maxOutputLength and windowLogMax', async () => {
    const data = textOfLength(3 << 20)
    const frame = compressSync(data, 19)
    await expect(through(createDecompressStream({ maxOutputLength: 1 << 20 }), frame, 65536)).rejects.toThrow(RangeError)
    await expect(through(createDecompressStream({ windowLogMax: 20 }), frame, 65536)).rejects.toThrow(/windowLogMax/)
  })

  it('keep memory bounded on a bomb when the reader is slow, and free everything when destroyed', async () => {
    const before = process.memoryUsage().rss
    const decompressor = createDecompressStream()
    let read = 0
    decompressor.on('data', (chunk: Buffer) => {
      read += chunk.length
      decompressor.pause()
      setTimeout(() => decompressor.resume(), 1)
    })
    decompressor.end(rleBomb(32768)) // 128 KiB that would expand to 4 GiB
    while (read < 32 << 20) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(process.memoryUsage().rss - before).toBeLessThan(256 << 20)
    decompressor.destroy()
    for (let i = 0; i < 100 && poolStats().decompressors.inUse > 0; i++) {
      gc()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(poolStats().decompressors.inUse).toBe(0)
  })

  it('survive being destroyed mid-stream', async () => {
    for (let i = 0; i < 20; i++) {
      const compressor = createCompressStream()
      compressor.on('error', () => {})
      compressor.write(textOfLength(1 << 20))
      compressor.destroy()
      const decompressor = createDecompressStream()
      decompressor.on('error', () => {})
      decompressor.write(compressSync(textOfLength(1 << 20)).subarray(0, 1000))
      decompressor.destroy(new Error('caller gave up'))
    }
    for (let i = 0; i < 100 && poolStats().compressors.inUse + poolStats().decompressors.inUse > 0; i++) {
      gc()
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    expect(poolStats().compressors.inUse).toBe(0)
    expect(poolStats().decompressors.inUse).toBe(0)
  })

  it('fail with an AbortError, and hold no context, when given a signal already aborted', async () => {
    for (const create of [createCompressStream, createDecompressStream]) {
      const stream = create({ signal: AbortSignal.abort() })
      const error = await new Promise((resolve) => stream.on('error', resolve))
      expect(error).toMatchObject({ name: 'AbortError', code: 'ABORT_ERR' })
    }
    expect(poolStats().compressors.inUse).toBe(0)
    expect(poolStats().decompressors.inUse).toBe(0)
  })

  it('stream 1 GiB through compression and back with RSS bounded', async () => {
    const unit = textOfLength(1 << 20)
    const total = 1024
    const sent = createHash('sha1')
    const received = createHash('sha1')
    const source = Readable.from(
      (function* () {
        for (let i = 0; i < total; i++) {
          const chunk = Buffer.from(unit)
          chunk.writeUInt32LE(i, 0) // no two chunks alike
          sent.update(chunk)
          yield chunk
        }
      })(),
    )
    let peak = 0
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50)
    const before = process.memoryUsage().rss
    let bytes = 0
    await pipeline(
      source,
      createCompressStream({ level: 1 }),
      createDecompressStream(),
      new Writable({
        write(chunk, _, done) {
          received.update(chunk)
          bytes += chunk.length
          done()
        },
      }),
    )
    clearInterval(sampler)
    expect(bytes).toBe(total << 20)
    expect(received.digest('hex')).toBe(sent.digest('hex'))
    expect(peak - before).toBeLessThan(256 << 20)
  }, 300_000)
})

describe('ZstdCompressionStream and ZstdDecompressionStream', () => {
  it('round-trip through pipeThrough, like the web platform streams', async () => {
    const data = corpusFile('plrabn12.txt')
    const compressed = new Blob([data]).stream().pipeThrough(new ZstdCompressionStream({ level: 5 }))
    const frame = Buffer.from(await new Response(compressed).arrayBuffer())
    expect(decompressSync(frame).equals(data)).toBe(true)
    const back = new Blob([frame]).stream().pipeThrough(new ZstdDecompressionStream())
    expect(Buffer.from(await new Response(back).arrayBuffer()).equals(data)).toBe(true)
    const broken = new Blob([frame.subarray(0, 100)]).stream().pipeThrough(new ZstdDecompressionStream())
    await expect(new Response(broken).arrayBuffer()).rejects.toThrow()
  })

  it('honour maxOutputLength and windowLogMax', async () => {
    const frame = compressSync(textOfLength(3 << 20), 19)
    const decode = (options: object) =>
      new Response(new Blob([frame]).stream().pipeThrough(new ZstdDecompressionStream(options))).arrayBuffer()
    await expect(decode({ maxOutputLength: 1 << 20 })).rejects.toThrow(RangeError)
    await expect(decode({ windowLogMax: 20 })).rejects.toThrow(/windowLogMax/)
    expect((await decode({ maxOutputLength: 3 << 20 })).byteLength).toBe(3 << 20)
  })

  it('decode an HTTP response as it arrives: the server flushes each part, and sends the next once the client has read it', async () => {
    const parts = [textOfLength(100), textOfLength(70_000), Buffer.from('{"done":true}')]
    const read = parts.map(() => {
      let resolve = () => {}
      const promise = new Promise<void>((done) => {
        resolve = done
      })
      return { promise, resolve }
    })
    const server = createServer(async (request, response) => {
      response.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'zstd' })
      const body = createCompressStream()
      body.pipe(response)
      if (request.url === '/probe') return body.end('probe')
      for (const [i, part] of parts.entries()) {
        body.write(part)
        await new Promise((resolve) => body.flush(resolve))
        await read[i].promise
      }
      body.end()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    try {
      // Node 24 and later decode zstd in fetch themselves; there, the body comes from node:http.
      const fetchDecodes = (await (await fetch(`${url}/probe`)).text()) === 'probe'
      const body = fetchDecodes
        ? (Readable.toWeb(await new Promise<Readable>((resolve) => get(`${url}/`, resolve))) as ReadableStream<Uint8Array>)
        : (await fetch(`${url}/`)).body!
      const reader = body.pipeThrough(new ZstdDecompressionStream()).getReader()
      const received: Buffer[] = []
      let whole = 0
      let next = 0
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) {
        received.push(Buffer.from(chunk.value))
        whole += chunk.value.length
        // Each part is whole before the next is sent: a decoder that waited for more would hang.
        while (next < parts.length && whole >= parts.slice(0, next + 1).reduce((sum, part) => sum + part.length, 0))
          read[next++].resolve()
      }
      expect(Buffer.concat(received).equals(Buffer.concat(parts))).toBe(true)
      expect(next).toBe(parts.length)
    } finally {
      server.close()
    }
  }, 20_000)
})

describe('memory bounded by the reader, not by the input', () => {
  // 48 MiB of the corpus (about 3:1, a 16 MiB frame) fed in 64 KiB chunks. The reader takes
  // 12 MiB of output, which needs about 4 MiB of input: the stream may read a few MiB ahead of
  // that, not 1 MiB of input per 1 MiB of output (the whole frame, for a long enough stream).
  const unit = Buffer.concat(corpus.map(({ data }) => data))
  const frame = compressSync(Buffer.concat(Array.from({ length: Math.ceil((48 << 20) / unit.length) }, () => unit)), 3)
  const idle = () => new Promise((resolve) => setTimeout(resolve, 500))

  it('a Node decompress stream reads its input only a few MiB ahead of what the reader took', async () => {
    expect(frame.length).toBeGreaterThan(12 << 20)
    let pulled = 0
    const source = Readable.from(
      (function* () {
        for (let at = 0; at < frame.length; at += 65536) {
          pulled += Math.min(65536, frame.length - at)
          yield frame.subarray(at, at + 65536)
        }
      })(),
    )
    const stream = source.pipe(createDecompressStream())
    let taken = 0
    for await (const chunk of stream) {
      taken += chunk.length
      await new Promise((resolve) => setImmediate(resolve))
      if (taken >= 12 << 20) break
    }
    await idle()
    expect(pulled).toBeLessThan(10 << 20)
    source.destroy()
  })

  it('a Web decompress stream too', async () => {
    let pulled = 0
    const source = new ReadableStream({
      pull(controller) {
        if (pulled >= frame.length) return controller.close()
        controller.enqueue(frame.subarray(pulled, pulled + 65536))
        pulled += 65536
      },
    })
    const reader = source.pipeThrough(new ZstdDecompressionStream()).getReader()
    for (let taken = 0; taken < 12 << 20; ) {
      taken += (await reader.read()).value!.length
      await new Promise((resolve) => setImmediate(resolve))
    }
    await idle()
    expect(pulled).toBeLessThan(10 << 20)
    await reader.cancel()
  })

  it('a chunk that lies about its length cannot stage more input than the limit', async () => {
    const { readable, writable } = new ZstdCompressionStream()
    const writer = writable.getWriter()
    let accepted = 0
    for (let i = 0; i < 10; i++) {
      const chunk = new Uint8Array(1 << 20)
      Object.defineProperty(chunk, 'length', { value: 0 })
      writer.write(chunk).then(
        () => accepted++,
        () => {},
      )
    }
    await idle()
    // Nobody reads: a write or two go through, then writes wait for room.
    expect(accepted).toBeLessThanOrEqual(4)
    await readable.cancel(new Error('done'))
    await expect(writer.closed).rejects.toThrow('done')
  })

  it.each(['node', 'web'])('a %s decompress stream gives everything up to maxOutputLength, then fails', async (kind) => {
    const data = textOfLength(3 << 20)
    const limit = (2 << 20) + 12345
    const received: Buffer[] = []
    const frames = Buffer.concat([compressSync(data.subarray(0, 1 << 20)), compressSync(data.subarray(1 << 20))])
    let failure: unknown
    try {
      if (kind === 'node') {
        const stream = createDecompressStream({ maxOutputLength: limit })
        stream.end(frames)
        for await (const chunk of stream) received.push(chunk)
      } else {
        const reader = new Blob([frames])
          .stream()
          .pipeThrough(new ZstdDecompressionStream({ maxOutputLength: limit }))
          .getReader()
        for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read()) received.push(Buffer.from(chunk.value))
      }
    } catch (error) {
      failure = error
    }
    expect(failure).toBeInstanceOf(RangeError)
    expect(failure).toMatchObject({ code: 'ERR_BUFFER_TOO_LARGE' })
    expect(Buffer.concat(received).equals(data.subarray(0, limit))).toBe(true)
  })
})

describe('ZstdDecompressionStream and its reader', () => {
  it('fails the writable side with the reason the reader cancelled with', async () => {
    const { readable, writable } = new ZstdDecompressionStream()
    const writer = writable.getWriter()
    const reader = readable.getReader()
    const writing = writer.write(rleBomb(64)) // 8 MiB out: the steps wait for the reader
    await reader.read()
    const reason = new Error('the reader has seen enough')
    await reader.cancel(reason)
    await writing.catch(() => {})
    await expect(writer.closed).rejects.toBe(reason)
    await expect(writer.write(rleBomb(1))).rejects.toBe(reason)
  })

  it('errors the readable side when a chunk is of the wrong type', async () => {
    const { readable, writable } = new ZstdCompressionStream()
    const writer = writable.getWriter()
    writer.write(12345 as any).catch(() => {})
    await expect(readable.getReader().read()).rejects.toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }))
  })
})

describe.skipIf(skipWithoutZstdCli)('streams and the zstd tool, through pipes', () => {
  it("the tool decompresses our stream, and we decompress the tool's", async () => {
    const data = textOfLength(5 << 20)
    const tool = spawn('zstd', ['-q', '-d', '-c'])
    const out: Buffer[] = []
    tool.stdout.on('data', (chunk: Buffer) => out.push(chunk))
    const closed = new Promise((resolve) => tool.on('close', resolve))
    await pipeline(Readable.from([data]), createCompressStream({ level: 3 }), tool.stdin)
    expect(await closed).toBe(0)
    expect(Buffer.concat(out).equals(data)).toBe(true)

    const encoder = spawn('zstd', ['-q', '-c', '-3'])
    encoder.stdin.end(data)
    const back: Buffer[] = []
    await pipeline(
      encoder.stdout,
      createDecompressStream(),
      new Writable({
        write(chunk, _, done) {
          back.push(chunk)
          done()
        },
      }),
    )
    expect(Buffer.concat(back).equals(data)).toBe(true)
    expect(zstdPiped(['-d', '-c'], await through(createCompressStream(), data, 1 << 16)).equals(data)).toBe(true)
  })
})
