'use strict'
// The zstd seekable format (docs/seekable.md): `compressSeekable` / `compressSeekableSync` cut
// the data into frames of `frameSize` bytes, compressed independently (a batch: in parallel on
// the threadpool) and followed by a seek table in a skippable frame; `openSeekable` reads ranges
// of such a file, decoding only the frames a range covers. The tables are read and written in
// native code (crates/core/src/seekable.rs), which refuses a table its file cannot hold.

const { Readable } = require('node:stream')

const { binding } = require('./lib/binding.js')
const { decompress } = require('./lib/calls.js')
const { coded, invalidType } = require('./lib/errors.js')
const { decompressOptions } = require('./lib/options.js')
const { bytes } = require('./lib/primordials.js')
const { integer, optionsObject } = require('./lib/validate.js')
const { compressMany, compressManySync } = require('./many.js')

/** Frames of 1 MiB of content by default: a read of a few KiB decodes at most 2 MiB. */
const DEFAULT_FRAME_SIZE = 1 << 20
/** The largest frame the seekable format's reference implementation reads: 1 GiB. */
const MAX_FRAME_SIZE = 1 << 30
/** Decoded frames a reader keeps by default, the most recently read. */
const DEFAULT_CACHED_FRAMES = 8
/** The footer of a seek table: the last bytes of a seekable file. */
const FOOTER_LENGTH = 9

/** `compressSeekable`'s options: the frame size, and the options of each frame's compression
 * (with a checksum by default: the seek table lists each frame's). */
function writeOptions(options) {
  const object = optionsObject(options, 'options', 'an object of compression options') ?? {}
  const { frameSize = DEFAULT_FRAME_SIZE, checksum = true, ...compressOptions } = object
  return {
    frameSize: integer(frameSize, 'options.frameSize', 1, MAX_FRAME_SIZE),
    compressOptions: { ...compressOptions, checksum },
  }
}

/** `data` in pieces of `frameSize` bytes (views, no copies). */
function piecesOf(data, frameSize) {
  const view = bytes(data, 'data')
  const pieces = []
  for (let at = 0; at < view.length; at += frameSize) pieces.push(view.subarray(at, at + frameSize))
  return pieces
}

/** The seekable file of `frames` (the compressed `pieces`): the frames, then their seek table,
 * which lists each frame's checksum when every frame has one. */
function assemble(frames, pieces) {
  const checksums = frames.every(hasChecksum) ? Uint32Array.from(frames, checksumOf) : undefined
  const table = binding.seekTableFrame(
    Uint32Array.from(frames, (frame) => frame.length),
    Uint32Array.from(pieces, (piece) => piece.length),
    checksums,
  )
  return Buffer.concat([...frames, table])
}

/** Whether `frame` is a zstd frame (magic 0xFD2FB528) that ends with a checksum of its content
 * (the Content_Checksum_flag, bit 2 of the frame header descriptor, the byte after the magic). */
function hasChecksum(frame) {
  const zstd = frame.length >= 9 && frame[0] === 0x28 && frame[1] === 0xb5 && frame[2] === 0x2f && frame[3] === 0xfd
  return zstd && (frame[4] & 0x04) !== 0
}

/** A frame's checksum: its last 4 bytes, the low 32 bits of the XXH64 of its content, which is
 * what a seek table lists. */
function checksumOf(frame) {
  return new DataView(frame.buffer, frame.byteOffset + frame.length - 4, 4).getUint32(0, true)
}

/** Compresses `data` into a seekable file (see docs/seekable.md). */
function compressSeekableSync(data, options) {
  const { frameSize, compressOptions } = writeOptions(options)
  const pieces = piecesOf(data, frameSize)
  return assemble(compressManySync(pieces, compressOptions), pieces)
}

/** Compresses `data` into a seekable file, its frames in parallel on the threadpool. */
async function compressSeekable(data, options) {
  const { frameSize, compressOptions } = writeOptions(options)
  const pieces = piecesOf(data, frameSize)
  return assemble(await compressMany(pieces, compressOptions), pieces)
}

/** A source as `{ size, read(position, length) }`: byte views are read in place, a
 * `fs.promises.FileHandle` through `read`, and any other object as it is. Every read is checked
 * to give the bytes asked for. */
async function sourceOf(source) {
  if (source instanceof Uint8Array || ArrayBuffer.isView(source) || source instanceof ArrayBuffer) {
    const view = bytes(source, 'source')
    return { size: view.length, read: async (position, length) => view.subarray(position, position + length) }
  }
  if (source === null || typeof source !== 'object') {
    throw invalidType('source', 'a byte view, a FileHandle or an object with size and read(position, length)', source)
  }
  if (typeof source.stat === 'function' && typeof source.fd === 'number' && typeof source.read === 'function') {
    const { size } = await source.stat()
    return {
      size,
      read: async (position, length) => {
        const buffer = Buffer.allocUnsafe(length)
        const { bytesRead } = await source.read(buffer, 0, length, position)
        return buffer.subarray(0, bytesRead)
      },
    }
  }
  const { size, read } = source
  if (typeof read !== 'function') throw invalidType('source.read', 'of type function', read)
  return {
    size: integer(size, 'source.size', 0, Number.MAX_SAFE_INTEGER),
    read: (position, length) => read.call(source, position, length),
  }
}

/** `length` bytes at `position` of `source`, as bytes: fewer, or something else, is an error. */
async function readExactly(source, position, length) {
  const got = await source.read(position, length)
  const view = ArrayBuffer.isView(got) ? bytes(got, "the source's read") : undefined
  if (view === undefined || view.length !== length) {
    const message = `the source gave ${view === undefined ? 'no bytes' : `${view.length} bytes`} for a read of ${length} at ${position}`
    throw coded(new Error(`zstd-pool: ${message}`), 'ERR_ZSTD_SEEKABLE_SHORT_READ')
  }
  return view
}

/** Opens a seekable file: reads its seek table, and gives a reader of its ranges. */
async function openSeekable(source, options) {
  const object = optionsObject(options, 'options', 'an object of reader options') ?? {}
  const { cacheFrames = DEFAULT_CACHED_FRAMES, ...limits } = object
  const settings = decompressOptions(limits)
  const cached = integer(cacheFrames, 'options.cacheFrames', 0, 1 << 16)
  const from = await sourceOf(source)
  if (from.size < FOOTER_LENGTH)
    throw coded(new Error('zstd-pool: not a seekable file: it does not end with a seek table'), 'ERR_ZSTD_SEEKABLE_NO_TABLE')
  const footer = await readExactly(from, from.size - FOOTER_LENGTH, FOOTER_LENGTH)
  const tableLength = binding.seekTableLength(footer, from.size)
  const table = await readExactly(from, from.size - tableLength, tableLength)
  return new SeekableReader(from, binding.seekTable(table, from.size), settings, cached)
}

/** The error of a frame that decodes to another size than its seek table lists. */
function notAsListed(frame, decoded, listed) {
  const message = `zstd-pool: the seek table is corrupt: frame ${frame} decodes to ${decoded} bytes, where it says ${listed}`
  return coded(new Error(message), 'ERR_ZSTD_SEEKABLE_CORRUPT')
}

/** A reader of a seekable file's ranges. */
class SeekableReader {
  #source
  #count
  #numbers
  #limits
  #cache = new Map()
  #cacheSize
  #closed = false

  constructor(source, table, limits, cacheSize) {
    this.#source = source
    this.#numbers = new Float64Array(table.buffer, table.byteOffset, table.length / 8)
    this.#count = this.#numbers[0]
    this.#limits = limits
    this.#cacheSize = cacheSize
  }

  /** The decompressed size of the file. */
  get size() {
    return this.#decompressedOffset(this.#count)
  }

  /** How many frames the file has. */
  get frameCount() {
    return this.#count
  }

  #compressedOffset(frame) {
    return this.#numbers[2 + frame]
  }

  #decompressedOffset(frame) {
    return this.#numbers[2 + this.#count + 1 + frame]
  }

  /** The table's checksum of `frame`, or undefined. */
  #checksum(frame) {
    return this.#numbers[1] === 1 ? this.#numbers[2 + 2 * (this.#count + 1) + frame] : undefined
  }

  /** The frame that holds decompressed byte `position` (< size). */
  #frameAt(position) {
    let low = 0
    let high = this.#count - 1
    while (low < high) {
      const middle = (low + high + 1) >>> 1
      if (this.#decompressedOffset(middle) <= position) low = middle
      else high = middle - 1
    }
    return low
  }

  /** Frame `frame`'s content, from the cache or decoded (and then cached). */
  async #decoded(frame) {
    const hit = this.#cache.get(frame)
    if (hit !== undefined) {
      // The most recently used last.
      this.#cache.delete(frame)
      this.#cache.set(frame, hit)
      return hit
    }
    const expected = this.#decompressedOffset(frame + 1) - this.#decompressedOffset(frame)
    if (expected > this.#limits.maxOutputLength) {
      const message = `zstd-pool: frame ${frame} holds ${expected} bytes, more than maxOutputLength (${this.#limits.maxOutputLength} bytes)`
      throw coded(new RangeError(message), 'ERR_BUFFER_TOO_LARGE')
    }
    const maxOutputLength = Math.max(1, expected)
    const start = this.#compressedOffset(frame)
    const encoded = await readExactly(this.#source, start, this.#compressedOffset(frame + 1) - start)
    const content = await decompress(encoded, { maxOutputLength, windowLogMax: this.#limits.windowLogMax }).catch((error) => {
      throw error?.code === 'ERR_BUFFER_TOO_LARGE' ? notAsListed(frame, 'more', expected) : error
    })
    if (content.length !== expected) throw notAsListed(frame, `${content.length}`, expected)
    const listed = this.#checksum(frame)
    // libzstd checked the content against the frame's own checksum; the table's must be that one.
    if (listed !== undefined && hasChecksum(encoded) && checksumOf(encoded) !== listed) {
      throw coded(
        new Error(`zstd-pool: frame ${frame} does not match the checksum its seek table lists`),
        'ERR_ZSTD_SEEKABLE_CHECKSUM',
      )
    }
    if (this.#cacheSize > 0) {
      if (this.#cache.size >= this.#cacheSize) this.#cache.delete(this.#cache.keys().next().value)
      this.#cache.set(frame, content)
    }
    return content
  }

  #checkOpen() {
    if (this.#closed) throw coded(new Error('zstd-pool: this seekable reader was closed'), 'ERR_INVALID_STATE')
  }

  /** The decompressed bytes `position` to `position + length` (fewer at the end of the file). */
  async read(position, length) {
    this.#checkOpen()
    const start = integer(position, 'position', 0, Number.MAX_SAFE_INTEGER)
    const end = Math.min(this.size, start + integer(length, 'length', 0, this.#limits.maxOutputLength))
    if (start >= end) return Buffer.alloc(0)
    const pieces = []
    for (let frame = this.#frameAt(start); frame < this.#count && this.#decompressedOffset(frame) < end; frame++) {
      const content = await this.#decoded(frame)
      const offset = this.#decompressedOffset(frame)
      pieces.push(content.subarray(Math.max(0, start - offset), Math.min(content.length, end - offset)))
    }
    return pieces.length === 1 ? Buffer.from(pieces[0]) : Buffer.concat(pieces)
  }

  /** A Node Readable of the decompressed bytes `start` to `end` (inclusive, as fs.createReadStream
   * takes them), decoded a frame at a time. */
  createReadStream({ start = 0, end = Number.POSITIVE_INFINITY } = {}) {
    this.#checkOpen()
    const first = integer(start, 'options.start', 0, Number.MAX_SAFE_INTEGER)
    const last = end === Number.POSITIVE_INFINITY ? this.size - 1 : integer(end, 'options.end', 0, Number.MAX_SAFE_INTEGER)
    const reader = this
    return Readable.from(
      (async function* frames() {
        let at = first
        while (at <= last && at < reader.size) {
          const frame = reader.#frameAt(at)
          const frameEnd = reader.#decompressedOffset(frame + 1)
          const chunk = await reader.read(at, Math.min(frameEnd, last + 1) - at)
          if (chunk.length === 0) return
          yield chunk
          at += chunk.length
        }
      })(),
    )
  }

  /** Drops the decoded frames it keeps; later reads throw. The source is the caller's to close. */
  close() {
    this.#closed = true
    this.#cache.clear()
  }
}

module.exports = { compressSeekable, compressSeekableSync, openSeekable }
