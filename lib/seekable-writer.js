'use strict'
// The engine of a seekable compress stream (seekable.js): frames cut every `frameSize` bytes of
// input or at a flush, each compressed through a native session of its own as the input comes,
// then the seek table. It has an engine's shape (write, flush, end, close), so that the Node and
// Web sides of lib/stream-sides.js drive it as they drive one frame's.

const { binding } = require('./binding.js')
const { Engine } = require('./engine.js')
const { coded } = require('./errors.js')
const { lengthOf, typedArrayGetters } = require('./primordials.js')

const { CompressSession } = binding

/** The most frames a seek table lists (the format's reference implementation's limit). */
const MAX_FRAMES = 0x0800_0000

/** Bytes `from` to `to` of `view`, as a view of its own made through the getters taken when
 * lib/primordials.js loaded (a chunk's own `subarray` may do anything); no bytes once they are
 * gone (the buffer detached, or shrunk below them). */
function piece(view, from, to) {
  try {
    const offset = typedArrayGetters.byteOffset.call(view)
    return new Uint8Array(typedArrayGetters.buffer.call(view), offset + from, to - from)
  } catch {
    return new Uint8Array(0)
  }
}

class SeekableWriter {
  /** The first frame's session, made with the stream (a disposed Dictionary fails it here, as it
   * fails other streams); each later frame's is made from it, which holds the dictionary. */
  #seed
  #seedUsed = false
  #frameSize
  #deliver
  #onError
  /** The current frame's engine: made by the first byte after a cut, so that a cut with nothing
   * since the last makes no frame. */
  #frame = null
  #content = 0 // bytes of input in the current frame
  #compressed = 0 // bytes of output of the current frame
  #tail = new Uint8Array(4) // its last 4 bytes: its checksum, when it has one
  #checksummed = false // whether its header says it ends with a checksum
  /** Each frame's compressed size, content size and checksum, end to end: a typed array that
   * doubles as it fills (a JS array of numbers reached V8's limit on array length at about 45
   * million frames, short of the format's limit). */
  #table = new Uint32Array(3 * 64)
  #frames = 0
  #allChecksummed = true // whether every frame so far ends with a checksum
  #closed = null

  constructor({ parameters, dictionary, frameSize }, deliver, onError) {
    this.#seed = new CompressSession(parameters, dictionary, undefined)
    this.#frameSize = frameSize
    this.#deliver = deliver
    this.#onError = onError
  }

  /** Takes a chunk: undefined when it went into the current frame at once, else a Promise that
   * settles once every frame it ends is out (a frame's output goes before the next one starts). */
  write(chunk) {
    if (this.#closed) throw this.#closed.reason
    const length = lengthOf(chunk)
    if (length === 0) return undefined
    if (this.#content + length < this.#frameSize) return this.#append(chunk)
    return this.#writeCut(chunk, length)
  }

  async #writeCut(chunk, length) {
    // Each piece is made as its turn comes, over what the chunk's buffer holds then: code that
    // runs meanwhile may detach or shrink it, and the pieces left then read as no bytes (see
    // #append). Making them all first cost a view per frame at once: millions for a large chunk
    // and a frameSize of a few bytes.
    for (let at = 0, room = this.#frameSize - this.#content; at < length; room = this.#frameSize) {
      const to = Math.min(length, at + room)
      await this.#append(piece(chunk, at, to))
      at = to
      if (this.#content >= this.#frameSize) await this.#endFrame()
    }
  }

  /** Appends `view` to the current frame (made now if need be), counting what was appended: the
   * bytes it holds now, with no code of the caller's between the count and the copy. */
  #append(view) {
    if (this.#closed) throw this.#closed.reason
    if (this.#frame === null) {
      if (this.#frames >= MAX_FRAMES) {
        throw coded(new RangeError(`zstd-pool: a seekable file holds at most ${MAX_FRAMES} frames`), 'ERR_OUT_OF_RANGE')
      }
      const session = this.#seedUsed ? this.#seed.nextFrame() : this.#seed
      this.#seedUsed = true
      this.#frame = new Engine(session, false, this.#deliverFrame, this.#onError, true)
    }
    this.#content += lengthOf(view)
    return this.#frame.write(view)
  }

  #deliverFrame = (output) => {
    const length = output.length
    if (this.#compressed === 0 && length >= 5) this.#checksummed = (output[4] & 0x04) !== 0
    this.#compressed += length
    if (length >= 4) {
      this.#tail.set(output.subarray(length - 4))
    } else {
      this.#tail.copyWithin(0, length)
      this.#tail.set(output, 4 - length)
    }
    return this.#deliver(output)
  }

  /** Ends the current frame, if any input came since the last cut. */
  async #endFrame() {
    const frame = this.#frame
    if (frame === null) return
    await frame.end()
    const tail = this.#tail
    const checksum = this.#checksummed ? (tail[0] | (tail[1] << 8) | (tail[2] << 16) | (tail[3] << 24)) >>> 0 : 0
    this.#allChecksummed &&= this.#checksummed
    if (3 * this.#frames === this.#table.length) {
      const grown = new Uint32Array(2 * this.#table.length)
      grown.set(this.#table)
      this.#table = grown
    }
    this.#table.set([this.#compressed, this.#content, checksum], 3 * this.#frames++)
    this.#frame = null
    this.#content = 0
    this.#compressed = 0
    this.#checksummed = false
  }

  /** Cuts the frame here (`stream.flush()`): what came since the last cut is a frame of its own. */
  flush() {
    if (this.#closed) return Promise.reject(this.#closed.reason)
    return this.#endFrame()
  }

  /** Ends the last frame, then writes the seek table, which lists each frame's checksum when
   * every frame has one (as compressSeekable's does). */
  async end() {
    if (this.#closed) throw this.#closed.reason
    await this.#endFrame()
    // A stream given nothing made no frame: its first frame's session goes unused.
    if (!this.#seedUsed) this.#seed.close()
    const count = this.#frames
    const column = (at) => Uint32Array.from({ length: count }, (_, i) => this.#table[3 * i + at])
    const table = binding.seekTableFrame(column(0), column(1), this.#allChecksummed ? column(2) : undefined)
    if (this.#closed) throw this.#closed.reason
    await this.#deliver(table)
  }

  /** Frees the current frame's session: the stream is gone. */
  close(reason) {
    this.#closed ??= { reason }
    this.#frame?.close(reason)
    if (!this.#seedUsed) this.#seed.close()
  }
}

module.exports = { SeekableWriter }
