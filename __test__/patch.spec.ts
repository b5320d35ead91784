import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

import {
  compress,
  compressMany,
  compressManySync,
  compressSync,
  createCompressStream,
  createDecompressStream,
  Dictionary,
  decompress,
  decompressMany,
  decompressManySync,
  decompressSync,
  frameInfo,
  Prefix,
} from 'zstd-pool'
import { corpus, corpusFile, skipWithoutZstdCli, wasi } from './helpers'
import { edited } from './records.mjs'

// Patch-from (`zstd --patch-from`): the new version of a file compressed against the old one.
const old = corpusFile('lcet10.txt')
const updated = edited(old, 12)
const directory = mkdtempSync(join(tmpdir(), 'zstd-pool-patch-'))
const file = (name: string, data: Uint8Array) => {
  const path = join(directory, name)
  writeFileSync(path, data)
  return path
}
const zstd = (args: string[]) => execFileSync('zstd', ['-q', '-c', ...args], { maxBuffer: 1 << 30 })

describe('patch-from: the prefix option', () => {
  it('compresses a new version against the old one into a small fraction of the whole, sync and async', async () => {
    const patch = compressSync(updated, { prefix: old })
    const alone = compressSync(updated)
    expect(patch.length).toBeLessThan(alone.length / 20)
    expect(decompressSync(patch, { prefix: old }).equals(updated)).toBe(true)
    expect((await compress(updated, { prefix: old })).equals(patch)).toBe(true)
    expect((await decompress(patch, { prefix: old })).equals(updated)).toBe(true)
    const many = await compressMany([updated, edited(old, 13)], { prefix: old, level: 9 })
    const back = await decompressMany(many, { prefix: old })
    expect(back[0].equals(updated) && back[1].equals(edited(old, 13))).toBe(true)
  })

  it.skipIf(skipWithoutZstdCli)('interoperates with zstd --patch-from both ways', () => {
    const oldPath = file('old', old)
    for (const level of [1, 3, 19]) {
      const theirs = zstd([`-${level}`, `--patch-from=${oldPath}`, file('new', updated)])
      expect(decompressSync(theirs, { prefix: old }).equals(updated)).toBe(true)
      const ours = compressSync(updated, { prefix: old, level })
      expect(zstd(['-d', `--patch-from=${oldPath}`, file('ours.zst', ours)]).equals(updated)).toBe(true)
      // As small as the tool's own patch (they feed libzstd differently: a few bytes apart).
      expect(ours.length).toBeLessThan(theirs.length * 1.1 + 16)
    }
  })

  it.skipIf(skipWithoutZstdCli)('sizes the window for a reference beyond the level’s own window, as the zstd tool does', () => {
    // 3 MiB of old content: level 3 alone keeps a 2 MiB window (so matches with the start of the
    // old version would be out of reach); the patch's window spans it all.
    const large = Buffer.concat([...corpus.map((entry) => entry.data), corpusFile('urls.10K')])
    const next = edited(large, 40)
    const patch = compressSync(next, { prefix: large })
    expect(patch.length).toBeLessThan(compressSync(next).length / 50)
    expect(decompressSync(patch, { prefix: large }).equals(next)).toBe(true)
    expect(zstd(['-d', `--patch-from=${file('large', large)}`, file('large.zst', patch)]).equals(next)).toBe(true)
    const theirs = zstd([`--patch-from=${file('large', large)}`, file('next', next)])
    expect(decompressSync(theirs, { prefix: large }).equals(next)).toBe(true)
    // With worker threads too (1 MiB jobs, so that 3 MiB takes them), where there are threads.
    if (wasi) return
    const threaded = compressSync(next, { prefix: large, workers: 2, jobSize: 1 << 20 })
    expect(threaded.length).toBeLessThan(compressSync(next).length / 20)
    expect(decompressSync(threaded, { prefix: large }).equals(next)).toBe(true)
  })

  it('decodes every frame of concatenated patches against the prefix, with or without recorded sizes', async () => {
    const frames = [
      compressSync(updated, { prefix: old }),
      compressSync(edited(old, 3), { prefix: old, contentSizeFlag: false }),
      compressSync('not a patch'),
      compressSync(updated, { prefix: old, checksum: true }),
    ]
    const expected = Buffer.concat([updated, edited(old, 3), Buffer.from('not a patch'), updated])
    expect(decompressSync(Buffer.concat(frames), { prefix: old }).equals(expected)).toBe(true)
    expect((await decompress(Buffer.concat(frames), { prefix: old })).equals(expected)).toBe(true)
  })

  it('fails clearly without the prefix, or with the wrong one', () => {
    const patch = compressSync(updated, { prefix: old, checksum: true })
    expect(() => decompressSync(patch)).toThrowError(
      expect.objectContaining({ code: expect.stringMatching(/^ZSTD_error_/) }) as Error,
    )
    expect(() => decompressSync(patch, { prefix: corpusFile('plrabn12.txt') })).toThrowError(
      expect.objectContaining({ code: expect.stringMatching(/^ZSTD_error_/) }) as Error,
    )
  })

  // Issue 27, item 3: frames were written without a checksum, so a patch decoded against the
  // wrong reference gave wrong bytes as a success. The zstd tool writes one by default.
  describe('a wrong reference', () => {
    const oneByteOff = Buffer.from(old)
    oneByteOff[200_000] ^= 1
    const wrong = {
      'one byte off': oneByteOff,
      'all zeros': Buffer.alloc(old.length),
      '10 bytes longer': Buffer.concat([old, Buffer.from('0123456789')]),
    }
    const blamesThePrefix = expect.objectContaining({
      name: 'Error',
      code: 'ZSTD_error_checksum_wrong',
      message: expect.stringContaining('the prefix is likely not the reference this frame was made against'),
    }) as Error

    it('fails on every path: patch-from frames carry a checksum by default', async () => {
      const frames = [
        compressSync(updated, { prefix: old }),
        await compress(updated, { prefix: old, level: 19 }),
        ...(await compressMany([updated], { prefix: old })),
        ...compressManySync([updated], { prefix: old }),
      ]
      for (const frame of frames) {
        expect(frameInfo(frame).frames[0]).toMatchObject({ checksum: true })
        expect(decompressSync(frame, { prefix: old }).equals(updated)).toBe(true)
        for (const [name, prefix] of Object.entries(wrong)) {
          expect(() => decompressSync(frame, { prefix }), name).toThrowError(blamesThePrefix)
          await expect(decompress(frame, { prefix }), name).rejects.toThrowError(blamesThePrefix)
          await expect(decompressMany([frame], { prefix }), name).rejects.toThrowError(blamesThePrefix)
          expect(() => decompressManySync([frame], { prefix }), name).toThrowError(blamesThePrefix)
        }
      }
      // Said otherwise, it is otherwise: no checksum, and no way to tell.
      for (const off of [
        compressSync(updated, { prefix: old, checksum: false }),
        compressSync(updated, { prefix: old, params: { 201: 0 } }),
      ]) {
        expect(frameInfo(off).frames[0]).toMatchObject({ checksum: false })
        expect(decompressSync(off, { prefix: wrong['one byte off'] }).equals(updated)).toBe(false)
      }
      // Without a prefix, the default is as it was.
      expect(frameInfo(compressSync(updated)).frames[0]).toMatchObject({ checksum: false })
      // A checksum that fails without a prefix blames the data, not a prefix.
      const corrupt = compressSync(updated, { checksum: true })
      corrupt[corrupt.length - 1] ^= 1
      expect(() => decompressSync(corrupt)).toThrowError(
        expect.objectContaining({ code: 'ZSTD_error_checksum_wrong', message: expect.not.stringContaining('prefix') }) as Error,
      )
    })

    it.skipIf(skipWithoutZstdCli)('fails as the zstd tool fails, on its frames and ours', () => {
      const ours = file('ours-checked.zst', compressSync(updated, { prefix: old }))
      const theirs = zstd([`--patch-from=${file('old', old)}`, file('new', updated)])
      for (const [name, prefix] of Object.entries(wrong)) {
        expect(() => decompressSync(theirs, { prefix }), name).toThrowError(blamesThePrefix)
        const wrongPath = file('wrong', prefix)
        let failure: { status?: number; stderr?: Buffer } = {}
        try {
          execFileSync('zstd', ['-q', '-d', '-c', `--patch-from=${wrongPath}`, ours], { stdio: 'pipe' })
        } catch (error) {
          failure = error as typeof failure
        }
        expect(failure.status, name).toBe(1)
        expect(String(failure.stderr), name).toMatch(/checksum/i)
      }
    })
  })

  it('takes any input type as the prefix, copies it for async calls, and refuses what cannot apply', async () => {
    const asArrayBuffer = old.buffer.slice(old.byteOffset, old.byteOffset + old.length)
    const patch = compressSync(updated, { prefix: old })
    for (const prefix of [asArrayBuffer, new DataView(asArrayBuffer), new Uint8Array(asArrayBuffer)]) {
      expect(compressSync(updated, { prefix }).equals(patch)).toBe(true)
      expect(decompressSync(patch, { prefix }).equals(updated)).toBe(true)
    }
    // A string is its UTF-8 bytes (lcet10.txt is ASCII).
    expect(compressSync(updated, { prefix: old.toString() }).equals(patch)).toBe(true)
    expect(decompressSync(patch, { prefix: old.toString() }).equals(updated)).toBe(true)
    // An empty prefix is none (but, as any prefix, turns the checksum on by default).
    expect(compressSync(updated, { prefix: '' }).equals(compressSync(updated, { checksum: true }))).toBe(true)

    // The prefix is copied when an async call starts: changing it afterwards changes nothing.
    const changing = Buffer.from(old)
    const pending = compress(updated, { prefix: changing, level: 19 })
    changing.fill(0)
    expect(decompressSync(await pending, { prefix: old }).equals(updated)).toBe(true)

    const incompatible = expect.objectContaining({ name: 'TypeError', code: 'ERR_INCOMPATIBLE_OPTION_PAIR' }) as Error
    const dictionary = new Dictionary(old.subarray(0, 4096))
    expect(() => compressSync(updated, { prefix: old, dictionary })).toThrowError(incompatible)
    expect(() => decompressSync(patch, { prefix: old, dictionary })).toThrowError(incompatible)
    await expect(compress(updated, { prefix: old, dictionary })).rejects.toThrowError(incompatible)
    const wrongType = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }) as Error
    expect(() => compressSync(updated, { prefix: 42 as never })).toThrowError(wrongType)
    expect(() => decompressSync(patch, { prefix: null as never })).toThrowError(wrongType)
    const streams = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }) as Error
    expect(() => createCompressStream({ prefix: old } as never)).toThrowError(streams)
    expect(() => createDecompressStream({ prefix: old } as never)).toThrowError(streams)
  })

  // Issue 27, item 4: a reference prepared once, shared by every call (the memory it saves is
  // measured in memory.spec.ts).
  describe('a Prefix', () => {
    it('is taken wherever a prefix is, and gives the frames the bytes give', async () => {
      const prefix = new Prefix(old)
      expect(prefix.size).toBe(old.length)
      const patch = compressSync(updated, { prefix: old })
      const next = edited(old, 13)
      expect(compressSync(updated, { prefix }).equals(patch)).toBe(true)
      expect((await compress(updated, { prefix })).equals(patch)).toBe(true)
      expect((await compress(updated, { prefix, level: 19 })).equals(await compress(updated, { prefix: old, level: 19 }))).toBe(
        true,
      )
      expect(compressManySync([updated, next], { prefix })[0].equals(patch)).toBe(true)
      const many = await compressMany([updated, next], { prefix })
      expect(many[0].equals(patch)).toBe(true)
      expect(decompressSync(patch, { prefix }).equals(updated)).toBe(true)
      expect((await decompress(patch, { prefix })).equals(updated)).toBe(true)
      expect((await decompressMany(many, { prefix }))[1].equals(next)).toBe(true)
      expect(decompressManySync(many, { prefix })[1].equals(next)).toBe(true)
      // Checked by default, as the bytes are, and a wrong Prefix is named as the bytes are.
      expect(frameInfo(compressSync(updated, { prefix })).frames[0]).toMatchObject({ checksum: true })
      expect(() => decompressSync(patch, { prefix: new Prefix(Buffer.alloc(old.length)) })).toThrowError(
        expect.objectContaining({ code: 'ZSTD_error_checksum_wrong', message: expect.stringContaining('the prefix') }) as Error,
      )
      if (!wasi) {
        const threaded = await compressMany([updated], { prefix, workers: 2 })
        expect(decompressSync(threaded[0], { prefix: old }).equals(updated)).toBe(true)
      }
    })

    it('holds its own copy, which calls in flight keep after it is disposed', async () => {
      const bytes = Buffer.from(old)
      const prefix = new Prefix(bytes)
      bytes.fill(0)
      const pending = [compress(updated, { prefix, level: 19 }), compressMany([updated], { prefix, level: 19 })]
      prefix[Symbol.dispose]()
      prefix[Symbol.dispose]()
      const [frame, [batched]] = await Promise.all(pending)
      expect(decompressSync(frame, { prefix: old }).equals(updated)).toBe(true)
      expect(decompressSync(batched, { prefix: old }).equals(updated)).toBe(true)
      // Disposed: every later call fails, and says why.
      const disposed = expect.objectContaining({
        name: 'Error',
        code: 'ERR_INVALID_STATE',
        message: expect.stringContaining('Prefix was disposed'),
      }) as Error
      expect(() => compressSync(updated, { prefix })).toThrowError(disposed)
      expect(() => decompressSync(frame, { prefix })).toThrowError(disposed)
      await expect(compress(updated, { prefix })).rejects.toThrowError(disposed)
      await expect(decompress(frame, { prefix })).rejects.toThrowError(disposed)
      await expect(compressMany([updated], { prefix })).rejects.toThrowError(disposed)
      await expect(decompressMany([frame], { prefix })).rejects.toThrowError(disposed)
    })

    it('is refused where a prefix is, and cannot be forged', () => {
      const prefix = new Prefix(old)
      const incompatible = expect.objectContaining({ name: 'TypeError', code: 'ERR_INCOMPATIBLE_OPTION_PAIR' }) as Error
      const dictionary = new Dictionary(old.subarray(0, 4096))
      expect(() => compressSync(updated, { prefix, dictionary })).toThrowError(incompatible)
      expect(() => decompressSync(updated, { prefix, dictionary })).toThrowError(incompatible)
      const streams = expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_VALUE' }) as Error
      expect(() => createCompressStream({ prefix } as never)).toThrowError(streams)
      expect(() => createDecompressStream({ prefix } as never)).toThrowError(streams)
      // An object shaped like one is not one; nor is a Prefix's data a Prefix.
      const wrongType = expect.objectContaining({
        name: 'TypeError',
        code: 'ERR_INVALID_ARG_TYPE',
        message: expect.stringContaining('Prefix'),
      }) as Error
      const forged = Object.create(Prefix.prototype, { size: { value: old.length } })
      expect(() => compressSync(updated, { prefix: forged })).toThrowError(wrongType)
      expect(() => new Prefix(42 as never)).toThrowError(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }) as Error)
      expect(String(Object.keys(prefix))).toBe('')
    })
  })

  it('is right when the prefix is a view of the memory that small results share', async () => {
    // From Node 24 on, small results share a slab: a prefix over that whole slab is read while
    // results land in it, so the result must never be written into it while the prefix is read.
    const first = compressSync('first result')
    const slab = new Uint8Array(first.buffer)
    for (let i = 0; i < 50; i++) {
      const input = `message ${i} `.repeat(10)
      // The frame is made against the slab as it is now: it lands in the slab's free room after.
      const asItWas = Buffer.from(slab)
      const frame = compressSync(input, { prefix: slab })
      expect(decompressSync(frame, { prefix: asItWas }).toString()).toBe(input)
      // Made on the threadpool (level 19), this frame has memory of its own: the slab is as it
      // was when the frame was made, and the result lands in it. (A frame made on the spot lands
      // in the slab itself, which then is no longer its prefix.)
      const prefix = Buffer.from(slab)
      const patch = await compress(input, { prefix, level: 19 })
      const unchanged = Buffer.from(slab).equals(prefix)
      expect(decompressSync(patch, { prefix: unchanged ? slab : prefix }).toString()).toBe(input)
    }
  })
})
