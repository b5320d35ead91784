import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import {
  compressSync,
  createCompressStream,
  Dictionary,
  decompressSync,
  type FrameInfo,
  frameInfo,
  trainDictionarySync,
} from 'zstd-pool'
import {
  corpus,
  corpusFile,
  jsonRecords,
  skippableFrame,
  skipWithoutZstdCli,
  textOfLength,
  zstdOnFile,
  zstdPiped,
} from './helpers'

/** What `zstd -lv` reads from `data`, written to a file: its own frame walk, the ground truth. */
function zstdList(data: Uint8Array) {
  const file = join(mkdtempSync(join(tmpdir(), 'zstd-pool-frame-')), 'input.zst')
  writeFileSync(file, data)
  const listed = spawnSync('zstd', ['-lv', file], { encoding: 'utf8' })
  if (listed.status !== 0) throw new Error(`zstd -lv failed: ${listed.stderr}`)
  const field = (label: string) => listed.stdout.match(new RegExp(`^${label}: .*?(\\d+)(?: B\\))?$`, 'm'))?.[1]
  const number = (label: string) => (field(label) === undefined ? undefined : Number(field(label)))
  return {
    frames: number('# Zstandard Frames'),
    skippableFrames: number('# Skippable Frames') ?? 0,
    dictionaryId: number('DictID'),
    windowSize: number('Window Size'),
    compressedSize: number('Compressed Size'),
    decompressedSize: number('Decompressed Size'),
    checksum: /^Check: XXH64/m.test(listed.stdout),
  }
}

/** Checks what `frameInfo` reads against `zstd -lv`: the counts and totals, the last zstd frame's
 * window and dictionary (what the tool prints), and whether any frame has a checksum. */
function expectAsZstdLists(data: Uint8Array, info: FrameInfo) {
  const listed = zstdList(data)
  const zstdFrames = info.frames.filter((frame) => !frame.skippable)
  const last = zstdFrames.at(-1)
  expect(info.frames.length).toBe(info.frameCount)
  expect({
    frames: zstdFrames.length,
    skippableFrames: info.frameCount - zstdFrames.length,
    compressedSize: info.compressedSize,
    // The tool prints a decompressed size only when every frame declares one.
    decompressedSize: info.contentSize ?? undefined,
    windowSize: last?.windowSize ?? 0,
    dictionaryId: last?.dictionaryId ?? 0,
    checksum: zstdFrames.some((frame) => frame.checksum),
  }).toEqual(listed)
}

/** A zstd frame header, single segment, declaring `size` in an 8-byte field, then one raw last
 * block of one byte. */
function declaring(size: bigint) {
  const frame = Buffer.alloc(4 + 1 + 8 + 3 + 1)
  frame.writeUInt32LE(0xfd2fb528, 0)
  frame[4] = 0xe0
  frame.writeBigUInt64LE(size, 5)
  frame.set([0x09, 0x00, 0x00, 0x78], 13)
  return frame
}

/** The length of the header of the zstd frame that `frame` starts with. */
function headerSize(frame: Buffer) {
  const descriptor = frame[4]
  const singleSegment = (descriptor & 0x20) !== 0
  return 5 + (singleSegment ? 0 : 1) + [0, 1, 2, 4][descriptor & 3] + [singleSegment ? 1 : 0, 2, 4, 8][descriptor >> 6]
}

const text = corpusFile('alice29.txt')

describe('frameInfo', () => {
  it("reads what compressSync's frames declare", () => {
    for (const { name, data } of corpus) {
      const frame = compressSync(data, { level: 1, checksum: name.length % 2 === 0 })
      const info = frameInfo(frame)
      expect(info, name).toEqual({
        frames: [
          {
            skippable: false,
            variant: null,
            contentSize: data.length,
            windowSize: expect.any(Number),
            dictionaryId: 0,
            checksum: name.length % 2 === 0,
            compressedSize: frame.length,
          },
        ],
        frameCount: 1,
        contentSize: data.length,
        windowSize: info.frames[0].windowSize,
        compressedSize: frame.length,
      })
      expect(decompressSync(frame).length).toBe(info.contentSize)
      // A frame that fits in its window is written in one segment: its window is its content.
      if (data.length <= 1 << 17) expect(info.windowSize, name).toBe(data.length)
    }
  })

  it('reads the ID of the dictionary a frame needs', () => {
    const dictionary = new Dictionary(trainDictionarySync(jsonRecords(2000, 7), { size: 4096 }))
    const frame = compressSync(jsonRecords(1, 9)[0], { dictionary })
    expect(frameInfo(frame).frames[0].dictionaryId).toBe(dictionary.id)
    expect(dictionary.id).toBeGreaterThan(0)
  })

  it('reads skippable frames: their variant and payload size', () => {
    const data = Buffer.concat([
      skippableFrame(Buffer.from('metadata'), 3),
      compressSync(text),
      skippableFrame(Buffer.alloc(0), 15),
      skippableFrame(Buffer.alloc(70_000, 1), 0),
    ])
    const info = frameInfo(data)
    const skippable = (variant: number, size: number) => ({
      skippable: true,
      variant,
      contentSize: size,
      windowSize: 0,
      dictionaryId: 0,
      checksum: false,
      compressedSize: 8 + size,
    })
    expect(info.frames[0]).toEqual(skippable(3, 8))
    expect(info.frames.slice(2)).toEqual([skippable(15, 0), skippable(0, 70_000)])
    expect(info.frameCount).toBe(4)
    // Skippable frames add nothing to what decompressing gives.
    expect(info.contentSize).toBe(text.length)
    expect(decompressSync(data).length).toBe(info.contentSize)
    const alone = frameInfo(skippableFrame(Buffer.from('only metadata')))
    expect([alone.frameCount, alone.contentSize, alone.windowSize]).toEqual([1, 0, 0])
  })

  it('sums the declared sizes of concatenated frames, and gives null when one declares none', async () => {
    const [a, b] = [corpusFile('html'), corpusFile('geo.protodata')]
    const declared = Buffer.concat([compressSync(a, 1), compressSync(b, 19), compressSync('')])
    const info = frameInfo(declared)
    expect(info.frameCount).toBe(3)
    expect(info.contentSize).toBe(a.length + b.length)
    expect(info.frames.map((frame) => frame.compressedSize)).toEqual([
      compressSync(a, 1).length,
      compressSync(b, 19).length,
      compressSync('').length,
    ])
    expect(info.compressedSize).toBe(declared.length)
    expect(info.windowSize).toBe(Math.max(...info.frames.map((frame) => frame.windowSize)))

    const stream = createCompressStream()
    stream.end(a)
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk)
    const streamed = Buffer.concat(chunks)
    expect(frameInfo(streamed).contentSize).toBeNull()
    const mixed = frameInfo(Buffer.concat([declared, streamed]))
    expect([mixed.frameCount, mixed.contentSize, mixed.frames[3].contentSize]).toEqual([4, null, null])
  })

  it("records a stream's pledgedSize", async () => {
    const stream = createCompressStream({ pledgedSize: text.length, checksum: true })
    stream.end(text)
    const chunks: Buffer[] = []
    for await (const chunk of stream) chunks.push(chunk)
    const [frame] = frameInfo(Buffer.concat(chunks)).frames
    expect([frame.contentSize, frame.checksum]).toEqual([text.length, true])
  })

  it('keeps the details of maxFrames frames (1000 by default), and counts every frame', () => {
    const frames = Buffer.concat(
      Array.from({ length: 1500 }, (_, i) => (i % 2 ? compressSync('') : skippableFrame(Buffer.alloc(0)))),
    )
    const info = frameInfo(frames)
    expect([info.frameCount, info.frames.length, info.contentSize, info.compressedSize]).toEqual([1500, 1000, 0, frames.length])
    expect(frameInfo(frames, { maxFrames: 0 })).toEqual({ ...info, frames: [] })
    expect(frameInfo(frames, { maxFrames: 3 }).frames).toEqual(info.frames.slice(0, 3))
    expect(frameInfo(frames, { maxFrames: 2 ** 32 - 1 }).frames.length).toBe(1500)
    expect(frameInfo(frames, {}).frames.length).toBe(1000)
    expect(frameInfo(frames, null as any).frames.length).toBe(1000)
  })

  it('reads every input type as decompressSync does', () => {
    const frame = compressSync(text)
    const expected = frameInfo(frame)
    const copy = () => new Uint8Array(frame).buffer
    const shared = new SharedArrayBuffer(frame.length + 5)
    new Uint8Array(shared).set(frame, 5)
    const offset = Buffer.concat([Buffer.from('xx'), frame]).subarray(2)
    for (const input of [copy(), new DataView(copy()), new Uint8Array(shared, 5), offset]) {
      expect(frameInfo(input)).toEqual(expected)
    }
    expect(() => frameInfo('a string is text, not zstd')).toThrowError(
      expect.objectContaining({ code: 'ZSTD_error_prefix_unknown' }),
    )
  })

  it('checks its arguments as the other functions do', () => {
    const frame = compressSync('x')
    for (const data of [undefined, null, 5, {}, [1, 2]]) {
      expect(() => frameInfo(data as any)).toThrowError(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
      )
    }
    for (const options of [5, 'maxFrames', true]) {
      expect(() => frameInfo(frame, options as any)).toThrowError(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
      )
    }
    for (const maxFrames of ['1', 1n, null, {}]) {
      expect(() => frameInfo(frame, { maxFrames } as any)).toThrowError(
        expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }),
      )
    }
    for (const maxFrames of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 32]) {
      expect(() => frameInfo(frame, { maxFrames })).toThrowError(
        expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' }),
      )
    }
  })
})

describe('frameInfo on hostile input', () => {
  /** frameInfo's error code for `data`, and decompressSync's: the same for a broken frame or block header. */
  const codes = (data: Uint8Array) => {
    const code = (call: () => unknown) => {
      try {
        call()
      } catch (error: any) {
        return `${error.name} ${error.code}`
      }
      return 'no error'
    }
    return [code(() => frameInfo(data)), code(() => decompressSync(data))]
  }

  it('fails on empty input as decompressSync does: it holds no frame', () => {
    expect(codes(Buffer.alloc(0))).toEqual(['Error ZSTD_error_srcSize_wrong', 'Error ZSTD_error_srcSize_wrong'])
    expect(() => frameInfo(new ArrayBuffer(0))).toThrowError(/truncated, or empty/)
  })

  it('fails on input cut anywhere but between frames', () => {
    const parts = [
      compressSync(textOfLength(300_000), { checksum: true }),
      skippableFrame(Buffer.from('tail'), 1),
      compressSync('x'),
    ]
    const data = Buffer.concat(parts)
    const ends = parts.map((_, i) => Buffer.concat(parts.slice(0, i + 1)).length)
    const cuts = new Set([
      ...Array(64).keys(),
      ...Array.from({ length: 64 }, (_, i) => data.length - i),
      ...ends.map((end) => end - 1),
    ])
    for (let cut = 0; cut < data.length; cut += 997) cuts.add(cut)
    for (const cut of cuts) {
      const ended = ends.indexOf(cut)
      if (ended >= 0) {
        expect(frameInfo(data.subarray(0, cut)).frameCount, `cut at ${cut}`).toBe(ended + 1)
      } else {
        expect(codes(data.subarray(0, cut)), `cut at ${cut}`).toEqual([
          'Error ZSTD_error_srcSize_wrong',
          'Error ZSTD_error_srcSize_wrong',
        ])
      }
    }
  })

  it('fails on non-zstd data and trailing garbage with the code decompressSync gives', () => {
    const frame = compressSync('hello')
    for (const data of [
      Buffer.from('plain text, not zstd'),
      Buffer.from('no'),
      Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3]),
      Buffer.concat([frame, Buffer.from('junk after the frame')]),
      Buffer.concat([frame, Buffer.from([0x28, 0xb5])]),
    ]) {
      const [ours, decompressing] = codes(data)
      expect(ours).toMatch(/^Error ZSTD_error_(prefix_unknown|srcSize_wrong)$/)
      expect(ours).toBe(decompressing)
    }
  })

  it('fails on a corrupt frame or block header with the code decompressSync gives', () => {
    const frame = compressSync(text, { checksum: true })
    const corrupt = (at: number, change: (byte: number) => number) => {
      const copy = Buffer.from(frame)
      copy[at] = change(copy[at])
      return copy
    }
    // The descriptor's reserved bit; a block of the reserved type; a window of 2^41 bytes (the format's largest).
    expect(codes(corrupt(4, (byte) => byte | 0x08))).toEqual(Array(2).fill('Error ZSTD_error_frameParameter_unsupported'))
    expect(codes(corrupt(headerSize(frame), (byte) => byte | 0b110))[0]).toBe('Error ZSTD_error_corruption_detected')
    const wide = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0xf8, 0x01, 0x00, 0x00])
    expect(codes(wide)).toEqual(Array(2).fill('Error ZSTD_error_frameParameter_windowTooLarge'))
    // A skippable frame longer than the input, and one whose length overflows 32 bits with its
    // header: both cut short, as decompressSync says (libzstd's own walk calls the second an
    // unsupported parameter).
    const skippable = skippableFrame(Buffer.from('abc'))
    skippable.writeUInt32LE(1000, 4)
    expect(codes(skippable)).toEqual(Array(2).fill('Error ZSTD_error_srcSize_wrong'))
    skippable.writeUInt32LE(2 ** 32 - 1, 4)
    // (decompressSync leaves this one to libzstd, whose word for it differs on 32-bit targets.)
    expect(codes(skippable)[0]).toBe('Error ZSTD_error_srcSize_wrong')
  })

  it('reads headers only: a frame whose blocks are corrupt inside passes, and decompressing it fails', () => {
    const frame = compressSync(text, { checksum: true })
    const info = frameInfo(frame)
    const firstBlockSize = frame.readUIntLE(headerSize(frame), 3) >> 3
    expect(firstBlockSize).toBeGreaterThan(1000)
    let failures = 0
    // Inside the first block: no header moves.
    for (let at = headerSize(frame) + 3; at < headerSize(frame) + 3 + 1000; at += 7) {
      const copy = Buffer.from(frame)
      copy[at] ^= 0x5a
      expect(frameInfo(copy)).toEqual(info)
      try {
        // With a checksum, a flip can never yield wrong data as a success.
        expect(decompressSync(copy).equals(text)).toBe(true)
      } catch (error: any) {
        expect(error.code).toMatch(/^ZSTD_error_/)
        failures++
      }
    }
    expect(failures).toBeGreaterThan(0)
  })

  it('reports declared sizes up to 2^64 - 1, rounded, without trusting them', () => {
    const huge = declaring(2n ** 64n - 1n)
    const [frame] = frameInfo(huge).frames
    // 2^64 - 1 is libzstd's sentinel for "unknown", but this header does declare it.
    expect([frame.contentSize, frame.windowSize]).toEqual([2 ** 64, 2 ** 64])
    expect(frameInfo(Buffer.concat([huge, huge])).contentSize).toBe(2 ** 65)
    expect(frameInfo(declaring(2n ** 53n + 1n)).contentSize).toBe(2 ** 53)
    // It holds one byte: decompressing does not believe it.
    expect(() => decompressSync(huge)).toThrow()
  })

  it('runs no setter on the prototypes as it makes its result, not even ones that call back in and detach the input', () => {
    const frame = compressSync(text)
    const other = Buffer.concat([compressSync('x'), skippableFrame(Buffer.from('y'))])
    const input = new Uint8Array(frame)
    // A Set: pushing onto an Array would call the setter too.
    const nested = new Set<FrameInfo>()
    let depth = 0
    const reenter = () => {
      // Guarded throughout: what it calls sets array elements too (structuredClone's own, on
      // Node 26).
      if (depth > 0) return
      depth++
      try {
        nested.add(frameInfo(other))
        // The outer call's input goes: transferred away, its view emptied (by transfer() where
        // there is one: structuredClone's transfer list is an array, which the setter empties).
        const buffer = input.buffer as ArrayBuffer & { transfer?: () => ArrayBuffer }
        if (input.byteLength === 0) return
        if (typeof buffer.transfer === 'function') buffer.transfer()
        else structuredClone(buffer, { transfer: [buffer] })
      } finally {
        depth--
      }
    }
    const keys = ['frames', 'frameCount', 'contentSize', 'windowSize', 'compressedSize', 'skippable', 'variant', 'checksum']
    for (const key of keys) Object.defineProperty(Object.prototype, key, { configurable: true, set: reenter })
    Object.defineProperty(Array.prototype, '0', { configurable: true, set: reenter })
    let info: FrameInfo
    try {
      info = frameInfo(input)
    } finally {
      for (const key of keys) delete (Object.prototype as any)[key]
      delete (Array.prototype as any)[0]
    }
    // Properties and elements are defined, never set: what the headers say is all there, and
    // no setter ran (napi-rs's objects, before, set their array's elements).
    expect([info.frameCount, info.contentSize, info.compressedSize]).toEqual([1, text.length, frame.length])
    expect(info.frames[0]).toEqual(frameInfo(frame).frames[0])
    expect([input.byteLength, nested.size]).toEqual([frame.length, 0])
  })

  it('counts a megabyte of empty frames quickly, keeping 1000 details', () => {
    const empty = compressSync('')
    const one = Buffer.concat([empty, skippableFrame(Buffer.alloc(0), 2)])
    const count = Math.floor((1 << 20) / one.length)
    const data = Buffer.concat(Array(count).fill(one))
    const started = performance.now()
    const info = frameInfo(data)
    const elapsed = performance.now() - started
    expect([info.frameCount, info.frames.length, info.contentSize, info.windowSize]).toEqual([2 * count, 1000, 0, 0])
    // About 10 ms on a 2-core VM.
    expect(elapsed).toBeLessThan(1000)
  })
})

describe.skipIf(skipWithoutZstdCli)('frameInfo and the zstd tool (zstd -lv)', () => {
  const data = text
  const modes: Record<string, () => Buffer> = {
    'from a file (content size recorded, checksum)': () => zstdOnFile(['-3'], data),
    'from a pipe (no content size)': () => zstdPiped(['-3', '-c'], data),
    'with --no-check': () => zstdOnFile(['-3', '--no-check'], data),
    'with --check from a pipe': () => zstdPiped(['--check', '-c'], data),
    'with --long=30 from a pipe (a 1 GiB window)': () => zstdPiped(['--long=30', '-c'], data),
    'with --zstd=wlog=23 from a pipe': () => zstdPiped(['--zstd=wlog=23', '-c'], data),
    'with --zstd=wlog=10 from a pipe (many blocks)': () => zstdPiped(['--zstd=wlog=10', '-c'], textOfLength(1 << 20)),
    'at level 19 from a file': () => zstdOnFile(['-19'], textOfLength(3 << 20)),
    'multi-threaded, small jobs': () => zstdPiped(['-T2', '-B262144', '-c'], textOfLength(3 << 20)),
    concatenated: () => Buffer.concat([zstdOnFile(['-1'], data), zstdPiped(['-c'], data), zstdOnFile(['--no-check'], data)]),
    'concatenated, all declared': () => Buffer.concat([zstdOnFile(['-1'], data), zstdOnFile(['-9'], corpusFile('html'))]),
    'with skippable frames': () =>
      Buffer.concat([skippableFrame(Buffer.from('head'), 4), zstdOnFile([], data), skippableFrame(Buffer.alloc(9))]),
    'by compressSync': () => compressSync(textOfLength(5 << 20), { checksum: true }),
  }

  for (const [mode, make] of Object.entries(modes)) {
    it(`reads frames written ${mode} as zstd -lv does`, () => {
      const frames = make()
      const info = frameInfo(frames)
      expectAsZstdLists(frames, info)
      expect(info.compressedSize).toBe(frames.length)
      const zstdFrames = info.frames.filter((frame) => !frame.skippable)
      expect(zstdFrames.length).toBeGreaterThan(0)
      if (info.contentSize !== null) expect(decompressSync(frames).length).toBe(info.contentSize)
    })
  }

  it('reads the window --long=30 and --zstd=wlog= ask for', () => {
    expect(frameInfo(zstdPiped(['--long=30', '-c'], data)).windowSize).toBe(2 ** 30)
    expect(frameInfo(zstdPiped(['--zstd=wlog=23', '-c'], data)).windowSize).toBe(2 ** 23)
    // A frame that records its size needs no more window than its content.
    expect(frameInfo(zstdOnFile(['--long=30'], data)).windowSize).toBe(data.length)
  })

  it('reads --check and --no-check', () => {
    expect(frameInfo(zstdPiped(['--check', '-c'], data)).frames[0].checksum).toBe(true)
    expect(frameInfo(zstdPiped(['--no-check', '-c'], data)).frames[0].checksum).toBe(false)
  })

  it('reads the dictionary ID of frames made with `zstd --train` and -D, and none with --no-dictID', () => {
    const dir = mkdtempSync(join(tmpdir(), 'zstd-pool-frame-dict-'))
    const files = jsonRecords(1000, 1).map((record, i) => {
      const file = join(dir, `sample-${i}.json`)
      writeFileSync(file, record)
      return file
    })
    const dictFile = join(dir, 'dict')
    spawnSync('zstd', ['-q', '--train', ...files, '-o', dictFile, '--maxdict=8192'])
    const dictionary = new Dictionary(readFileSync(dictFile))
    expect(dictionary.id).toBeGreaterThan(0)
    const record = jsonRecords(1, 5)[0]
    const withId = zstdPiped(['-c', '-D', dictFile], record)
    const withoutId = zstdPiped(['-c', '-D', dictFile, '--no-dictID'], record)
    expect(frameInfo(withId).frames[0].dictionaryId).toBe(dictionary.id)
    expect(frameInfo(withoutId).frames[0].dictionaryId).toBe(0)
    expectAsZstdLists(withId, frameInfo(withId))
    expectAsZstdLists(withoutId, frameInfo(withoutId))
    // Ours records the same ID.
    expect(frameInfo(compressSync(record, { dictionary })).frames[0].dictionaryId).toBe(dictionary.id)
  })
})
