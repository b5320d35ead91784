'use strict'
// PackedResults: what compressManyPacked / decompressManyPacked (many.js) give, a batch's results
// end to end in one Buffer per group with where each ends, as python-zstandard's
// multi_*_to_buffer gives them. The JavaScript thread then makes one Buffer per group instead of
// an ArrayBuffer or a view per result; a result's view is made when it is asked for. A
// PackedResults can be given back to a batch as its inputs, read a group at a time with no
// view per message.

const { invalidValue } = require('./errors.js')
const { bufferFrom } = require('#platform')
const { lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')

const { apply } = Reflect
/** What only this module has, so that only it makes PackedResults. */
const MADE_HERE = Symbol('PackedResults')

/** Whether a value is a PackedResults (a brand check: no code of the value's runs). */
let isPacked
/** A PackedResults as a batch's inputs (see `sourceOf` in many.js). */
let sourceOf

/** A batch's results, in order, end to end over one Buffer per group. */
class PackedResults {
  /** Each group's results end to end. */
  #chunks
  /** Where each chunk's memory is, as it was made: its ArrayBuffer, offset and length. */
  #memory
  /** Where each result ends in its chunk, a Float64Array per chunk. */
  #ends
  /** The index of each chunk's first result, and past the last, the number of results. */
  #firsts

  constructor(madeHere, chunks, ends) {
    if (madeHere !== MADE_HERE) throw new TypeError('PackedResults are made by compressManyPacked and decompressManyPacked')
    this.#chunks = chunks
    this.#memory = chunks.map((chunk) => ({
      buffer: typedArrayGetters.buffer.call(chunk),
      offset: typedArrayGetters.byteOffset.call(chunk),
      length: lengthOf(chunk),
    }))
    this.#ends = ends
    this.#firsts = [0]
    for (const chunkEnds of ends) this.#firsts.push(this.#firsts[this.#firsts.length - 1] + chunkEnds.length)
  }

  /** How many results there are. */
  get length() {
    return this.#firsts[this.#firsts.length - 1]
  }

  /** Their size in bytes, together. */
  get byteLength() {
    let total = 0
    for (const memory of this.#memory) total += memory.length
    return total
  }

  /** The results' memory, a Buffer per group, each holding its results end to end: written one
   * after the other, they are every result in order. */
  get buffers() {
    return [...this.#chunks]
  }

  /** Result `index` (a negative one counts from the end), a Buffer over the batch's memory;
   * undefined past either end. */
  at(index) {
    const integer = Math.trunc(Number(index)) || 0
    const at = integer < 0 ? integer + this.length : integer
    if (at < 0 || at >= this.length) return undefined
    let chunk = 0
    while (this.#firsts[chunk + 1] <= at) chunk++
    return this.#view(chunk, at - this.#firsts[chunk])
  }

  /** Every result in order, each a Buffer over the batch's memory. */
  *[Symbol.iterator]() {
    for (let chunk = 0; chunk < this.#chunks.length; chunk++) {
      for (let i = 0; i < this.#ends[chunk].length; i++) yield this.#view(chunk, i)
    }
  }

  #view(chunk, i) {
    const ends = this.#ends[chunk]
    const start = i === 0 ? 0 : ends[i - 1]
    const { buffer, offset } = this.#memory[chunk]
    return bufferFrom(buffer, offset + start, ends[i] - start)
  }

  static {
    isPacked = (value) => value !== null && typeof value === 'object' && #chunks in value
    sourceOf = (value) => value.#source()
  }

  #source() {
    const sizes = []
    for (const ends of this.#ends) {
      for (let i = 0; i < ends.length; i++) sizes.push(ends[i] - (i === 0 ? 0 : ends[i - 1]))
    }
    return { sizes, group: (start, end, into) => this.#group(start, end, into) }
  }

  /** Results `start` to `end` end to end, as a batch's native call takes them: a view of their
   * chunk when they are all in one, else a copy in memory from `into(total)`; and their lengths.
   * The memory is read again here, where no code of the caller's can run before the native call
   * copies it. */
  #group(start, end, into) {
    const lengths = new Uint32Array(end - start)
    const parts = []
    let total = 0
    for (let chunk = 0; chunk < this.#chunks.length && this.#firsts[chunk] < end; chunk++) {
      const first = this.#firsts[chunk]
      const last = this.#firsts[chunk + 1]
      if (last <= start) continue
      const ends = this.#ends[chunk]
      const from = Math.max(start, first) - first
      const to = Math.min(end, last) - first
      const byteStart = from === 0 ? 0 : ends[from - 1]
      for (let i = from; i < to; i++) lengths[first + i - start] = ends[i] - (i === 0 ? 0 : ends[i - 1])
      parts.push(this.#bytes(chunk, byteStart, ends[to - 1] - byteStart))
      total += ends[to - 1] - byteStart
    }
    if (parts.length === 1) return { joined: parts[0], lengths }
    const joined = into(total)
    let at = 0
    for (const part of parts) {
      apply(typedArraySet, joined, [part, at])
      at += lengthOf(part)
    }
    return { joined, lengths }
  }

  /** `length` bytes of chunk `chunk` from `start`: its memory must be as it was made. */
  #bytes(chunk, start, length) {
    const memory = this.#memory[chunk]
    if (lengthOf(this.#chunks[chunk]) !== memory.length) {
      throw invalidValue('inputs', 'a PackedResults whose memory was not transferred', this)
    }
    if (length === 0) return new Uint8Array(0)
    return new Uint8Array(memory.buffer, memory.offset + start, length)
  }
}

/** PackedResults over `chunks` (a Buffer per group) and `ends` (a Float64Array per group). */
function packed(chunks, ends) {
  return new PackedResults(MADE_HERE, chunks, ends)
}

/** Where each result of a group ends, from the bytes native code gave (an `f64` each). */
function endsOf(bytes) {
  const ends = new Float64Array(lengthOf(bytes) / Float64Array.BYTES_PER_ELEMENT)
  apply(typedArraySet, new Uint8Array(typedArrayGetters.buffer.call(ends)), [bytes])
  return ends
}

module.exports = { PackedResults, endsOf, isPacked, packed, sourceOf }
