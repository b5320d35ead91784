'use strict'
// PackedResults: what compressManyPacked / decompressManyPacked (many.js) give, a batch's results
// end to end in one Buffer per run of messages (a group, or the part of one another group took
// over) with where each ends, as python-zstandard's multi_*_to_buffer gives them. The JavaScript
// thread then makes one Buffer per run instead of
// an ArrayBuffer or a view per result; a result's view is made when it is asked for. A
// PackedResults can be given back to a batch as its inputs, read a group at a time with no
// view per message. Everything here reads its own private state, never a property the caller
// can replace (an iterator, `length`), and checks the memory is still there before each read.

const { coded } = require('./errors.js')
const { bufferFrom } = require('#platform')
const { lengthOf, typedArrayGetters, typedArraySet } = require('./primordials.js')

const { apply } = Reflect
// Taken when the module loads, as primordials.js takes what it calls.
const { max, min } = Math
const { isNaN: isNotANumber } = Number
/** What only this module has, so that only it makes PackedResults. */
const MADE_HERE = Symbol('PackedResults')

/** Whether a value is a PackedResults (a brand check: no code of the value's runs). */
let isPacked
/** A PackedResults as a batch's inputs (see `sourceOf` in many.js). */
let sourceOf
/** A PackedResults' results, each a view, in a new Array. */
let viewsOf

/** A batch's results, in order, end to end over one Buffer per run of messages. */
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
    this.#ends = ends
    this.#memory = []
    this.#firsts = [0]
    for (let i = 0; i < chunks.length; i++) {
      const chunk = chunks[i]
      this.#memory[i] = {
        buffer: typedArrayGetters.buffer.call(chunk),
        offset: typedArrayGetters.byteOffset.call(chunk),
        length: lengthOf(chunk),
      }
      this.#firsts[i + 1] = this.#firsts[i] + ends[i].length
    }
  }

  /** How many results there are. */
  get length() {
    return this.#firsts[this.#chunks.length]
  }

  /** Their size in bytes, together (0 for memory taken away). */
  get byteLength() {
    let total = 0
    for (let i = 0; i < this.#chunks.length; i++) total += lengthOf(this.#chunks[i])
    return total
  }

  /** The results' memory, a Buffer per run, each holding its results end to end: written one
   * after the other, they are every result in order. */
  get buffers() {
    const buffers = []
    for (let i = 0; i < this.#chunks.length; i++) buffers[i] = this.#chunks[i]
    return buffers
  }

  /** Result `index` (a negative one counts from the end), a Buffer over the batch's memory;
   * undefined past either end. */
  at(index) {
    // As Array.prototype.at reads its index (a BigInt or a Symbol throws a TypeError).
    const number = +index
    const integer = isNotANumber(number) ? 0 : number - (number % 1)
    const at = integer < 0 ? integer + this.length : integer
    if (!(at >= 0 && at < this.length)) return undefined
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

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `PackedResults { length: ${this.length}, byteLength: ${this.byteLength}, buffers: ${this.#chunks.length} }`
  }

  #view(chunk, i) {
    this.#check(chunk)
    const ends = this.#ends[chunk]
    const start = i === 0 ? 0 : ends[i - 1]
    const { buffer, offset } = this.#memory[chunk]
    return bufferFrom(buffer, offset + start, ends[i] - start)
  }

  /** Throws unless chunk `chunk`'s memory is as it was made (not transferred or detached). */
  #check(chunk) {
    if (lengthOf(this.#chunks[chunk]) !== this.#memory[chunk].length) {
      throw coded(new TypeError('zstd-pool: a PackedResults whose memory was transferred'), 'ERR_INVALID_STATE')
    }
  }

  static {
    isPacked = (value) => value !== null && typeof value === 'object' && #chunks in value
    sourceOf = (value) => value.#source()
    viewsOf = (value) => {
      const views = []
      for (let chunk = 0; chunk < value.#chunks.length; chunk++) {
        for (let i = 0; i < value.#ends[chunk].length; i++) views[views.length] = value.#view(chunk, i)
      }
      return views
    }
  }

  #source() {
    const sizes = []
    for (let chunk = 0; chunk < this.#ends.length; chunk++) {
      const ends = this.#ends[chunk]
      for (let i = 0; i < ends.length; i++) sizes[sizes.length] = ends[i] - (i === 0 ? 0 : ends[i - 1])
    }
    return { sizes, group: (start, end, into, copied) => this.#group(start, end, into, copied) }
  }

  /** Which of chunk `chunk`'s results are among results `start` to `end`: `from` to `to` (past). */
  #span(chunk, start, end) {
    const first = this.#firsts[chunk]
    const next = this.#firsts[chunk + 1]
    return { from: max(start, first) - first, to: min(end, next) - first }
  }

  /** Results `start` to `end` end to end, as a batch's native call takes them, and their
   * lengths: a view of their chunk when they are all in one and the native call that copies
   * them follows at once, else a copy in memory from `into(total)` (`copied`: whether a copy is
   * needed anyway, because code of the caller's can run before the native call). The memory is
   * checked here, with nothing of the caller's to run before the native call (or the copy). */
  #group(start, end, into, copied) {
    const lengths = new Uint32Array(end - start)
    let total = 0
    let first = -1
    let last = -1
    for (let chunk = 0; chunk < this.#chunks.length && this.#firsts[chunk] < end; chunk++) {
      if (this.#firsts[chunk + 1] <= start) continue
      this.#check(chunk)
      if (first < 0) first = chunk
      last = chunk
      const ends = this.#ends[chunk]
      const { from, to } = this.#span(chunk, start, end)
      for (let i = from; i < to; i++) {
        const length = ends[i] - (i === 0 ? 0 : ends[i - 1])
        if (length > 0xffffffff) throw tooLarge(this.#firsts[chunk] + i, length)
        lengths[this.#firsts[chunk] + i - start] = length
        total += length
      }
    }
    const bytesOf = (chunk) => {
      const ends = this.#ends[chunk]
      const { from, to } = this.#span(chunk, start, end)
      const byteStart = from === 0 ? 0 : ends[from - 1]
      const { buffer, offset } = this.#memory[chunk]
      return new Uint8Array(buffer, offset + byteStart, ends[to - 1] - byteStart)
    }
    if (first === last && !copied) return { joined: bytesOf(first), lengths }
    const joined = into(total)
    let at = 0
    for (let chunk = first; chunk <= last; chunk++) {
      const part = bytesOf(chunk)
      apply(typedArraySet, joined, [part, at])
      at += lengthOf(part)
    }
    return { joined, lengths }
  }
}

/** What a batch says of an input larger than a batch's lengths can say (2^32 - 1 bytes). */
function tooLarge(index, length) {
  const message = `The input inputs[${index}] is ${length} bytes: a batch takes inputs of up to 4294967295 bytes; compress a larger one on its own`
  return coded(new RangeError(message), 'ERR_OUT_OF_RANGE')
}

/** PackedResults over `chunks` (a Buffer per run of messages) and `ends` (a Float64Array per run). */
function packed(chunks, ends) {
  return new PackedResults(MADE_HERE, chunks, ends)
}

/** Where each result of a group ends, from the bytes native code gave (an `f64` each). */
function endsOf(bytes) {
  const ends = new Float64Array(lengthOf(bytes) / Float64Array.BYTES_PER_ELEMENT)
  apply(typedArraySet, new Uint8Array(typedArrayGetters.buffer.call(ends)), [bytes])
  return ends
}

module.exports = { PackedResults, endsOf, isPacked, packed, sourceOf, tooLarge, viewsOf }
