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
const { compressOptions, decompressOptions } = require('./lib/options.js')
const { bytes } = require('./lib/primordials.js')
const { ownMemory } = require('./lib/staging.js')
const { SeekableWriter } = require('./lib/seekable-writer.js')
const { flushStream, split, webPair, ZstdTransform } = require('./lib/stream-sides.js')
const { integer, optionsObject } = require('./lib/validate.js')
const { compressMany, compressManySync } = require('./many.js')
const { frameInfo } = require('./frame.js')
const { createDecompressStream } = require('./stream.js')

/** Frames of 1 MiB of content by default: a read of a few KiB decodes at most 2 MiB. */
const DEFAULT_FRAME_SIZE = 1 << 20
/** The largest frame the seekable format's reference implementation reads: 1 GiB. */
const MAX_FRAME_SIZE = 1 << 30
/** Decoded frames a reader keeps by default, the most recently read. */
const DEFAULT_CACHED_FRAMES = 8
/** Frames listed as larger than this are not decoded whole (nor kept): a read decodes them as a
 * stream up to the end of its range and keeps only its range. A file whose table lists 1 GiB
 * frames (pyzstd's default) would otherwise cost a gigabyte per frame read, and one crafted to
 * list them over a few kilobytes of RLE blocks, as much. */
const WHOLE_FRAME_LIMIT = 8 << 20
/** How much of a large frame's compressed bytes a read asks its source for at a time. */
const READ_PIECE = 1 << 20
/** The footer of a seek table: the last bytes of a seekable file. */
const FOOTER_LENGTH = 9

/** `compressSeekable`'s options: the frame size, and the options of each frame's compression
 * (with a checksum by default: the seek table lists each frame's). */
function writeOptions(options) {
  const object =
    typeof options === 'number'
      ? { level: options }
      : (optionsObject(options, 'options', 'a level or an object of compression options') ?? {})
  const { frameSize = DEFAULT_FRAME_SIZE, checksum = true, ...compressOptions } = object
  if (compressOptions.prefix !== undefined) throw notForSeekable('options.prefix', compressOptions.prefix)
  return {
    frameSize: integer(frameSize, 'options.frameSize', 1, MAX_FRAME_SIZE),
    compressOptions: { ...compressOptions, checksum },
  }
}

/** An option seekable files do not take: patch-from is for one frame against one reference, and
 * a reader's reads are cancelled by not awaiting them. */
function notForSeekable(name, value) {
  return coded(
    new TypeError(`The "${name}" property is not supported by seekable files, received ${typeof value}`),
    'ERR_INVALID_ARG_VALUE',
  )
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

/** Whether `entry` (what a seek table lists as one frame) is one zstd frame that ends with a
 * checksum: an entry may also hold skippable frames, or several frames, whose last 4 bytes are not
 * that checksum. */
function isOneFrameWithChecksum(entry) {
  if (!hasChecksum(entry)) return false
  const { frameCount, frames } = frameInfo(entry, { maxFrames: 1 })
  return frameCount === 1 && frames[0].checksum
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

/** What a seekable compress stream's sides drive: frames cut every `frameSize` bytes or at a
 * flush, each streamed through a native session of its own (lib/seekable-writer.js). */
function seekableEngine(options) {
  const { frameSize, compressOptions: frameOptions } = writeOptions(options)
  // Streams compress single-threaded: `workers` does not apply.
  const { parameters, dictionary } = compressOptions(frameOptions, 'options')
  return (deliver, onError) => new SeekableWriter({ parameters, dictionary, frameSize }, deliver, onError)
}

/** A Node Transform stream that writes a seekable file. */
class ZstdSeekableCompress extends ZstdTransform {
  constructor(options) {
    super(options, seekableEngine)
  }

  /** Ends the current frame here (unless nothing came since the last cut), as node:zlib's
   * flush(callback) takes it: what was written so far can be read back by a seekable reader once
   * the table is written, and is decodable now. */
  flush(callback) {
    flushStream(this, callback)
  }
}

/** A Node Transform stream that writes a seekable file (see docs/seekable.md). */
function createSeekableCompressStream(options) {
  return new ZstdSeekableCompress(options)
}

/** The Web form of `createSeekableCompressStream`, as `ZstdCompressionStream` is of
 * `createCompressStream`: `readable.pipeThrough(new ZstdSeekableCompressionStream())`. */
class ZstdSeekableCompressionStream {
  constructor(options) {
    const { readable, writable } = webPair(seekableEngine(split(options)[1]))
    this.readable = readable
    this.writable = writable
  }
}

/** A source as `{ size, read(position, length) }`: byte views are read in place, a
 * `fs.promises.FileHandle` through `read`, and any other object as it is. Every read is checked
 * to give the bytes asked for. */
async function sourceOf(source) {
  if (ArrayBuffer.isView(source) || source instanceof ArrayBuffer || isShared(source)) {
    const view = bytes(source, 'source')
    // A view of a buffer detached since gives nothing, which readExactly reports.
    return {
      size: view.length,
      read: async (position, length) => (view.length === 0 ? undefined : view.subarray(position, position + length)),
    }
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

function isShared(value) {
  return typeof SharedArrayBuffer === 'function' && value instanceof SharedArrayBuffer
}

/** `length` bytes at `position` of `source`, as bytes: fewer, or something else, is an error. */
async function readExactly(source, position, length) {
  if (length === 0) return new Uint8Array(0)
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
  const { cacheFrames = DEFAULT_CACHED_FRAMES, signal, prefix, ...decoding } = object
  if (prefix !== undefined) throw notForSeekable('options.prefix', prefix)
  if (signal !== undefined) throw notForSeekable('options.signal', signal)
  // Checked now; each frame's decompress takes them (the dictionary too), with its own limit, and
  // the dictionaries as they were read now (an empty array is none).
  const checked = decompressOptions(decoding)
  const settings = { ...decoding, maxOutputLength: checked.maxOutputLength }
  if (decoding.dictionaries !== undefined) settings.dictionaries = checked.dictionaryList
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
  #decoding
  #maxOutputLength
  #cache = new Map()
  #cacheSize
  #pending = new Map()
  #closed = false

  constructor(source, table, decoding, cacheSize) {
    this.#source = source
    this.#numbers = new Float64Array(table.buffer, table.byteOffset, table.length / 8)
    this.#count = this.#numbers[0]
    this.#decoding = decoding
    this.#maxOutputLength = decoding.maxOutputLength
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

  /** Frame `frame`'s content size as the table lists it, checked against maxOutputLength. */
  #listed(frame) {
    const listed = this.#decompressedOffset(frame + 1) - this.#decompressedOffset(frame)
    if (listed > this.#maxOutputLength) {
      const message = `zstd-pool: frame ${frame} holds ${listed} bytes, more than maxOutputLength (${this.#maxOutputLength} bytes)`
      throw coded(new RangeError(message), 'ERR_BUFFER_TOO_LARGE')
    }
    return listed
  }

  /** Frame `frame`'s compressed bytes, and its content's size as the table lists it. */
  async #encoded(frame) {
    const listed = this.#listed(frame)
    const start = this.#compressedOffset(frame)
    return { encoded: await readExactly(this.#source, start, this.#compressedOffset(frame + 1) - start), listed }
  }

  /** Frame `frame`'s content, from the cache, from a decode under way, or decoded now (and then
   * cached). */
  #whole(frame) {
    const hit = this.#cache.get(frame)
    if (hit !== undefined) {
      // The most recently used last.
      this.#cache.delete(frame)
      this.#cache.set(frame, hit)
      return hit
    }
    let pending = this.#pending.get(frame)
    if (pending === undefined) {
      pending = this.#decodeWhole(frame).finally(() => this.#pending.delete(frame))
      this.#pending.set(frame, pending)
    }
    return pending
  }

  async #decodeWhole(frame) {
    const { encoded, listed } = await this.#encoded(frame)
    const listedSum = this.#checksum(frame)
    // Read before the decode: the source may reuse its buffer once its read is done.
    const ownSum = listedSum !== undefined && isOneFrameWithChecksum(encoded) ? checksumOf(encoded) : undefined
    const empty = encoded.length === 0
    const content = empty
      ? Buffer.alloc(0)
      : await decompress(encoded, { ...this.#decoding, maxOutputLength: Math.max(1, listed) }).catch((error) => {
          throw error?.code === 'ERR_BUFFER_TOO_LARGE' ? notAsListed(frame, 'more', listed) : error
        })
    if (content.length !== listed) throw notAsListed(frame, `${content.length}`, listed)
    // libzstd checked the content against the frame's own checksum, and the table's must be that
    // one; a frame without one (as zstd's own seekable writer makes them) is hashed here. An
    // entry of no bytes has no content to check.
    const checked = ownSum ?? (listedSum !== undefined && !empty ? binding.seekableChecksum(ownMemory(content)) : undefined)
    if (checked !== undefined && checked !== listedSum) {
      throw coded(
        new Error(`zstd-pool: frame ${frame} does not match the checksum its seek table lists`),
        'ERR_ZSTD_SEEKABLE_CHECKSUM',
      )
    }
    if (this.#cacheSize > 0 && !this.#closed) {
      if (this.#cache.size >= this.#cacheSize) this.#cache.delete(this.#cache.keys().next().value)
      this.#cache.set(frame, content)
    }
    return content
  }

  /** Bytes `from` to `to` of a frame too large to decode whole, as they are decoded: its
   * compressed bytes are read a piece at a time and decoded as a stream, which stops once the
   * range is out, so that what a read holds is bounded by its length and the frame's window rather
   * than by what the table says the frame holds. Checked against the table's size when the decode
   * reaches the frame's end (libzstd checks the frame's own checksum there). */
  async *#partChunks(frame, from, to) {
    const listed = this.#listed(frame)
    const source = this.#source
    const [first, last] = [this.#compressedOffset(frame), this.#compressedOffset(frame + 1)]
    const compressed = Readable.from(
      (async function* pieces() {
        for (let at = first; at < last; at += READ_PIECE) yield await readExactly(source, at, Math.min(READ_PIECE, last - at))
      })(),
      { objectMode: false },
    )
    const decoder = createDecompressStream({ ...this.#decoding, maxOutputLength: Math.max(1, listed) })
    compressed.on('error', (error) => decoder.destroy(error))
    compressed.pipe(decoder)
    let at = 0
    try {
      for await (const chunk of decoder) {
        if (at + chunk.length > from && at < to) yield chunk.subarray(Math.max(0, from - at), Math.min(chunk.length, to - at))
        at += chunk.length
        if (at >= to) return
      }
    } catch (error) {
      throw error?.code === 'ERR_BUFFER_TOO_LARGE' ? notAsListed(frame, 'more', listed) : error
    } finally {
      compressed.destroy()
      decoder.destroy()
    }
    if (at !== listed) throw notAsListed(frame, `${at}`, listed)
  }

  /** `#partChunks` gathered into one Buffer, made once. */
  async #part(frame, from, to) {
    const out = Buffer.allocUnsafe(to - from)
    let written = 0
    for await (const chunk of this.#partChunks(frame, from, to)) {
      out.set(chunk, written)
      written += chunk.length
    }
    return out
  }

  #checkOpen() {
    if (this.#closed) throw coded(new Error('zstd-pool: this seekable reader was closed'), 'ERR_INVALID_STATE')
  }

  /** The decompressed bytes `position` to `position + length` (fewer at the end of the file). */
  async read(position, length) {
    this.#checkOpen()
    const start = integer(position, 'position', 0, Number.MAX_SAFE_INTEGER)
    const end = Math.min(this.size, start + integer(length, 'length', 0, this.#maxOutputLength))
    if (start >= end) return Buffer.alloc(0)
    const pieces = []
    // Whether the last piece was made for this read (a part of a large frame): a whole frame is
    // the cache's, and is copied.
    let made = false
    for (let frame = this.#frameAt(start); frame < this.#count && this.#decompressedOffset(frame) < end; frame++) {
      const offset = this.#decompressedOffset(frame)
      const size = this.#decompressedOffset(frame + 1) - offset
      const from = Math.max(0, start - offset)
      const to = Math.min(size, end - offset)
      made = size > WHOLE_FRAME_LIMIT
      pieces.push(made ? await this.#part(frame, from, to) : (await this.#whole(frame)).subarray(from, to))
    }
    if (pieces.length === 1) return made ? pieces[0] : Buffer.from(pieces[0])
    return Buffer.concat(pieces)
  }

  /** The bytes `first` to `last` (inclusive) as chunks, decoded a frame at a time. */
  async *#rangeChunks(first, last) {
    let at = first
    while (at <= last && at < this.size) {
      const frame = this.#frameAt(at)
      const offset = this.#decompressedOffset(frame)
      const frameEnd = this.#decompressedOffset(frame + 1)
      const to = Math.min(frameEnd, last + 1)
      if (frameEnd - offset > WHOLE_FRAME_LIMIT) {
        // A large frame, as it is decoded.
        this.#checkOpen()
        for await (const chunk of this.#partChunks(frame, at - offset, to - offset)) yield Buffer.from(chunk)
      } else {
        yield await this.read(at, to - at)
      }
      at = to
    }
  }

  /** `{ start, end }` as fs.createReadStream takes them (`end` inclusive), checked. */
  #range(options) {
    this.#checkOpen()
    const { start = 0, end = Number.POSITIVE_INFINITY } = optionsObject(options, 'options', 'an object of stream options') ?? {}
    const first = integer(start, 'options.start', 0, Number.MAX_SAFE_INTEGER)
    const last =
      end === Number.POSITIVE_INFINITY ? Math.max(first, this.size) : integer(end, 'options.end', first, Number.MAX_SAFE_INTEGER)
    return [first, last]
  }

  /** A Node Readable of the decompressed bytes `start` to `end` (inclusive, as fs.createReadStream
   * takes them), decoded a frame at a time. */
  createReadStream(options) {
    return Readable.from(this.#rangeChunks(...this.#range(options)), { objectMode: false })
  }

  /** The Web form of `createReadStream`, named as `FileHandle.readableWebStream()` is: a
   * ReadableStream of the same bytes, each chunk decoded when the reader pulls (none ahead of it);
   * cancel() stops the reading and decoding once the chunk under way is done. */
  readableWebStream(options) {
    const chunks = this.#rangeChunks(...this.#range(options))
    let cancelled = false
    return new ReadableStream(
      {
        pull: async (controller) => {
          const { value, done } = await chunks.next()
          if (cancelled) return
          if (done) controller.close()
          else controller.enqueue(new Uint8Array(value.buffer, value.byteOffset, value.length))
        },
        cancel: async () => {
          cancelled = true
          await chunks.return()
        },
      },
      { highWaterMark: 0 },
    )
  }

  /** Drops the decoded frames it keeps (and those of reads under way, when they end); later reads
   * reject. The source is the caller's to close. */
  close() {
    this.#closed = true
    this.#cache.clear()
  }
}

module.exports = {
  compressSeekable,
  compressSeekableSync,
  createSeekableCompressStream,
  openSeekable,
  ZstdSeekableCompressionStream,
}
