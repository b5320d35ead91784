import { describe, expect, it } from 'vitest'

import { compress, compressSync, decompress, decompressSync } from 'zstd-pool'
import { corpus, corpusFile, rleBomb, skippableFrame, skipWithoutZstdCli, textOfLength, zstdOnFile, zstdPiped } from './helpers'

/** Both paths must agree on every outcome, so each case runs through both. */
const paths = {
  decompressSync: async (data: any, options?: any) => decompressSync(data, options),
  decompress: (data: any, options?: any) => decompress(data, options),
}

describe.each(Object.entries(paths))('%s', (_, run) => {
  it('round-trips every corpus file', async () => {
    for (const { name, data } of corpus) {
      expect((await run(compressSync(data))).equals(data), name).toBe(true)
    }
  })

  it('decompresses concatenated frames and skips skippable frames', async () => {
    const [a, b] = [corpusFile('html'), corpusFile('geo.protodata')]
    const input = Buffer.concat([
      skippableFrame(Buffer.from('metadata')),
      compressSync(a, 1),
      skippableFrame(Buffer.alloc(0), 15),
      compressSync(b, 19),
      compressSync(Buffer.alloc(0)),
    ])
    expect((await run(input)).equals(Buffer.concat([a, b]))).toBe(true)
    expect((await run(skippableFrame(Buffer.from('only metadata')))).length).toBe(0)
  })

  it('accepts every input type', async () => {
    const data = corpusFile('kppkn.gtb')
    const frame = compressSync(data)
    const copy = () => new Uint8Array(frame).buffer
    for (const input of [new Uint8Array(copy()), new DataView(copy()), copy(), new Uint8Array(copy(), 0, frame.length)]) {
      expect((await run(input)).equals(data)).toBe(true)
    }
  })

  it('fails on truncated input with a zstd error, never partial output', async () => {
    const frame = compressSync(corpusFile('lcet10.txt'))
    for (const end of [0, 3, 10, frame.length >> 1, frame.length - 1]) {
      await expect(run(frame.subarray(0, end)), `cut at ${end}`).rejects.toThrowError(
        expect.objectContaining({ name: 'Error', code: 'ZSTD_error_srcSize_wrong' }),
      )
    }
  })

  it('fails on corrupt and non-zstd input with an Error naming the zstd error', async () => {
    await expect(run(Buffer.from('plain text, not zstd'))).rejects.toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_prefix_unknown', message: 'zstd: Unknown frame descriptor' }),
    )
    const data = corpusFile('alice29.txt')
    const frame = compressSync(data, { checksum: true })
    let failures = 0
    for (let i = 20; i < frame.length; i += 997) {
      const corrupt = Buffer.from(frame)
      corrupt[i] ^= 0x5a
      const outcome = await run(corrupt).then(
        (output) => output,
        (error) => error,
      )
      if (outcome instanceof Error) {
        expect((outcome as any).code).toMatch(/^ZSTD_error_/)
        failures++
      } else {
        // With a checksum, a flip can never yield wrong data as a success.
        expect(outcome.equals(data)).toBe(true)
      }
    }
    expect(failures).toBeGreaterThan(0)
    const trailing = Buffer.concat([compressSync('hello'), Buffer.from('junk after the frame')])
    await expect(run(trailing)).rejects.toThrow(/^zstd: /)
  })

  it('stops at maxOutputLength with a RangeError', async () => {
    const data = textOfLength(1 << 20)
    const declared = compressSync(data)
    const undeclared = zstdFreeStreamFrame(data)
    for (const frame of [declared, undeclared]) {
      await expect(run(frame, { maxOutputLength: (1 << 20) - 1 })).rejects.toThrowError(
        expect.objectContaining({ name: 'RangeError', code: 'ERR_BUFFER_TOO_LARGE' }),
      )
      expect((await run(frame, { maxOutputLength: 1 << 20 })).equals(data)).toBe(true)
    }
  })

  it('refuses a decompression bomb in bounded memory', async () => {
    // 32 KiB of input that would expand to 1 GiB.
    const bomb = rleBomb(8192)
    expect(bomb.length).toBeLessThan(33 * 1024)
    const before = process.memoryUsage().rss
    await expect(run(bomb, { maxOutputLength: 16 << 20 })).rejects.toThrow(RangeError)
    expect(process.memoryUsage().rss - before).toBeLessThan(256 << 20)
  })

  it('does not allocate what a header merely claims', async () => {
    // A 17-byte frame whose header declares a content size of 1 TiB.
    const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xe0, 0, 0, 0, 0, 0, 1, 0, 0, 0x09, 0, 0, 0x78])
    const before = process.memoryUsage().rss
    // Over the largest Buffer on Node 20 (a RangeError); under it from Node 22 on, where the
    // frame fails as the corrupt frame it is.
    await expect(run(header)).rejects.toThrowError(
      expect.objectContaining({ code: expect.stringMatching(/^(ERR_BUFFER_TOO_LARGE|ZSTD_error_\w+)$/) }),
    )
    expect(process.memoryUsage().rss - before).toBeLessThan(64 << 20)
    // Claiming 1 GiB (under the limit) with one byte of content: a zstd error, not a 1 GiB buffer.
    const modest = Buffer.from(header)
    modest.writeBigUInt64LE(1n << 30n, 5)
    await expect(run(modest)).rejects.toThrowError(expect.objectContaining({ code: expect.stringMatching(/^ZSTD_error_/) }))
  })

  it('decodes into a Buffer of its own from the size the first frame declares, whatever follows it', async () => {
    const [a, b] = [textOfLength(5000), textOfLength(70_000)]
    const cases: [Buffer, Buffer][] = [
      [compressSync(a), a],
      [Buffer.concat([compressSync(a), compressSync(b)]), Buffer.concat([a, b])],
      [Buffer.concat([compressSync(a), skippableFrame(Buffer.from('skip'))]), a],
      [Buffer.concat([compressSync(a), compressSync(Buffer.alloc(0))]), a],
    ]
    for (const [input, expected] of cases) {
      const first = await run(input)
      const second = await run(input)
      expect(first.equals(expected)).toBe(true)
      // Memory of its own: nothing another result is written into.
      expect(first.buffer.byteLength).toBe(first.length)
      first.fill(0)
      expect(second.equals(expected)).toBe(true)
    }
    // Zeros compress over 128 times, so that no Buffer is made for them up front. A result of
    // 4 KiB or more that fits exactly in what a slab has left (where small results share slabs)
    // is not put in it either.
    const small = compressSync(Buffer.alloc(1000, 1))
    const zeros = new Map<number, Buffer>()
    for (let size = 4096; size < 8192; size += 8) zeros.set(size, compressSync(Buffer.alloc(size)))
    for (let i = 0; i < 16; i++) {
      const shared = await run(small)
      const room = shared.buffer.byteLength - ((shared.byteOffset + shared.length + 7) & ~7)
      if (!zeros.has(room)) continue
      expect((await run(zeros.get(room))).buffer.byteLength).toBe(room)
    }
    // A first frame that declares more than its blocks hold, or than the limit allows.
    const [whole] = cases[0]
    const lying = Buffer.from(whole)
    lying.writeUInt16LE(0xffff, 5)
    await expect(run(lying)).rejects.toThrowError(expect.objectContaining({ code: expect.stringMatching(/^ZSTD_error_/) }))
    await expect(run(whole, { maxOutputLength: 4999 })).rejects.toThrowError(RangeError)
  })

  it('refuses a frame that ends short of the size it declares, among frames of unknown size too', async () => {
    // Declares 200 bytes, holds 100 in a raw block, then an empty last block (libzstd's streaming
    // decoder does not check the size then); followed by a frame that declares no size.
    const short = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0xa0, 200, 0, 0, 0, 100 << 3, 0, 0]),
      Buffer.alloc(100, 'a'),
      Buffer.from([1, 0, 0]),
    ])
    const unknownSize = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38, 1 | (4 << 3), 0, 0]),
      Buffer.from('tail'),
    ])
    for (const input of [short, Buffer.concat([short, unknownSize]), Buffer.concat([unknownSize, short])]) {
      await expect(run(input)).rejects.toThrowError(expect.objectContaining({ code: 'ZSTD_error_corruption_detected' }))
    }
  })

  it('decodes, and refuses, what follows a million empty blocks as it does alone', async () => {
    // More headers than an async call reads on the JavaScript thread: it reads them where it
    // decodes, with the same outcome.
    const payload = Buffer.from('hello, world')
    const last = Buffer.from([1 | (payload.length << 3), 0, 0])
    const emptyBlocks = Buffer.alloc(3e6)
    for (const header of [
      [0x20, payload.length],
      [0x00, 0x50],
    ]) {
      const frame = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, ...header]), emptyBlocks, last, payload])
      expect(await run(frame)).toEqual(payload)
      await expect(run(frame, { maxOutputLength: 11 })).rejects.toThrowError(RangeError)
    }
    // Then a frame that declares 5,000 bytes and needs an 8 KiB window, over windowLogMax 10.
    const blocksOfNothing = Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x20, 0]), emptyBlocks, Buffer.from([1, 0, 0])])
    const wide = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x40, 0x18, 4744 & 0xff, 4744 >> 8, 0x41, 0x9c, 0]), // a raw last block of 5,000
      Buffer.alloc(5000, 'w'),
    ])
    expect(await run(wide)).toEqual(Buffer.alloc(5000, 'w'))
    for (const input of [wide, Buffer.concat([blocksOfNothing, wide])]) {
      await expect(run(input, { windowLogMax: 10 })).rejects.toThrowError(
        expect.objectContaining({ code: 'ZSTD_error_frameParameter_windowTooLarge' }),
      )
    }
  })

  it('refuses frames needing a window above windowLogMax, naming the option', async () => {
    // The zstd tool writes the window it was told to when it cannot see the input's size.
    const data = corpusFile('urls.10K')
    const window24 = Buffer.concat([
      Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, (24 - 10) << 3]), // no content size, window 2^24
      ...rawBlocks(data),
    ])
    await expect(run(window24, { windowLogMax: 23 })).rejects.toThrowError(
      expect.objectContaining({
        code: 'ZSTD_error_frameParameter_windowTooLarge',
        message: expect.stringMatching(/windowLogMax/),
      }),
    )
    expect((await run(window24)).equals(data)).toBe(true)
    const sized = compressSync(data, 19)
    await expect(run(sized, { windowLogMax: 10 })).rejects.toThrow(/raise the windowLogMax option/)
    expect((await run(sized, { windowLogMax: 20 })).equals(data)).toBe(true)
  })

  it('validates its options', async () => {
    const frame = compressSync('x')
    await expect(run(frame, 5)).rejects.toThrowError(expect.objectContaining({ name: 'TypeError' }))
    for (const maxOutputLength of [0, -1, 1.5, NaN, 2 ** 60]) {
      await expect(run(frame, { maxOutputLength })).rejects.toThrowError(
        expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }),
      )
    }
    await expect(run(frame, { maxOutputLength: '10' })).rejects.toThrow(TypeError)
    for (const windowLogMax of [9, 32, 27.5]) {
      await expect(run(frame, { windowLogMax })).rejects.toThrowError(expect.objectContaining({ name: 'RangeError' }))
    }
    await expect(run(123)).rejects.toThrow(TypeError)
  })
})

/** The blocks of a frame that stores `data` raw, 64 KiB a block. */
function rawBlocks(data: Buffer): Buffer[] {
  const blocks: Buffer[] = []
  for (let offset = 0; offset < data.length; offset += 65536) {
    const chunk = data.subarray(offset, offset + 65536)
    const value = (offset + 65536 >= data.length ? 1 : 0) | (chunk.length << 3)
    blocks.push(Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff]), chunk)
  }
  return blocks
}

/** A frame without a content size, as streaming encoders write it (here: the zstd tool on a pipe). */
function zstdFreeStreamFrame(data: Buffer): Buffer {
  if (skipWithoutZstdCli) {
    // Without the tool, build one by hand: raw blocks, no content size, a 1 MiB window.
    return Buffer.concat([Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x50]), ...rawBlocks(data)])
  }
  return zstdPiped(['-3', '-c'], data)
}

describe.skipIf(skipWithoutZstdCli)('frames written by the zstd tool', () => {
  const data = corpusFile('plrabn12.txt')
  const modes: Record<string, () => Buffer> = {
    'from a file (content size recorded)': () => zstdOnFile(['-3'], data),
    'from a pipe (no content size, checksummed)': () => zstdPiped(['-3', '-c'], data),
    'without a checksum': () => zstdPiped(['-3', '--no-check', '-c'], data),
    'at a fast level': () => zstdPiped(['--fast=5', '-c'], data),
    'at level 19': () => zstdOnFile(['-19'], data),
    'at --ultra -22': () => zstdOnFile(['--ultra', '-22'], data),
    'multi-threaded, small jobs': () => zstdPiped(['-T2', '-B262144', '-c'], textOfLength(3 << 20)),
    'with --long=24': () => zstdOnFile(['--long=24'], data),
    'with --long=28 from a pipe (needs windowLogMax 28)': () => zstdPiped(['--long=28', '-c'], data),
    concatenated: () => Buffer.concat([zstdOnFile(['-1'], data), zstdPiped(['-c'], data)]),
  }

  for (const [mode, make] of Object.entries(modes)) {
    it(`decompresses a frame written ${mode}`, async () => {
      const frame = make()
      const expected = mode.startsWith('multi')
        ? textOfLength(3 << 20)
        : mode === 'concatenated'
          ? Buffer.concat([data, data])
          : data
      const options = mode.includes('windowLogMax 28') ? { windowLogMax: 28 } : {}
      expect(decompressSync(frame, options).equals(expected)).toBe(true)
      expect((await decompress(frame, options)).equals(expected)).toBe(true)
    })
  }

  it('detects a corrupted checksum written by the tool', () => {
    const frame = zstdPiped(['-3', '-c'], data)
    frame[frame.length - 1] ^= 1
    expect(() => decompressSync(frame)).toThrowError(expect.objectContaining({ code: 'ZSTD_error_checksum_wrong' }))
  })

  it('the tool decompresses what compress writes, and we decompress what it writes from our output', async () => {
    for (const { name, data: file } of corpus) {
      const ours = await compress(file, 3)
      const theirs = zstdPiped(['-d', '-c'], ours)
      expect(theirs.equals(file), name).toBe(true)
      expect(decompressSync(zstdPiped(['-c'], theirs)).equals(file), name).toBe(true)
    }
  })
})
