'use strict'
// The engine under every stream: one native session of crates/core/src/stream.rs driven for a Node or a Web
// stream. Each chunk is a step on the libuv threadpool, and each step's output goes to the reader
// only as fast as it reads, so a chunk that expands a lot stays bounded in memory.

const { binding } = require('./binding.js')
const { allocUnsafeSlow } = require('#platform')
const { materialize } = require('./results.js')
const { ownMemory } = require('./staging.js')

const { Flush } = binding

/** A zero-length chunk of our own that asks a stream to flush: compression emits everything
 * taken so far as decodable data, decompression everything it can decode so far. The stream
 * faces (stream.js, zlib.js for node:zlib's flush kinds) write it; the Node stream looks for it.
 * A Buffer: a Node stream would turn another Uint8Array into a new Buffer. */
const FLUSH = allocUnsafeSlow(0)

/** Most input staged ahead of the running step before a write waits: the writer runs ahead
 * of the threadpool by this much, and the next step takes all of it at once. */
const STAGE_LIMIT = 1 << 20

/**
 * Drives one native session for a Node or a Web stream. A write copies its chunk into the
 * session's staged input and returns at once while less than `STAGE_LIMIT` is staged (else a
 * Promise of room); steps run on the libuv threadpool one at a time, each taking everything
 * staged, so a stream pays one round trip per batch of chunks and the writer works while a
 * step runs. Each output goes to `deliver(output)`, which returns a Promise when the reader
 * wants no more for now: the next step waits for it. A decompression step produces at most
 * 1 MiB, so a chunk that expands a lot comes out in several steps, each after the reader asked
 * for more. A step that fails calls `onError(error)` once: a write may have returned already.
 */
class Engine {
  #session
  #decoding
  #deliver
  #onError
  #staged = 0 // bytes appended since the last step took them
  #running = null // the steps under way, as one Promise that never rejects
  #room = null // a writer waiting for the stage to drain: { resolve, reject }
  #closed = null // why the stream went, once it has
  #holding

  /** `holding`: no step runs until more than `STAGE_LIMIT` is staged (or the end), so that input
   * of at most that much is compressed in one step at the end: as one call compresses it, its
   * size in the frame header (a seekable file's frames, lib/seekable-writer.js). */
  constructor(session, decoding, deliver, onError, holding = false) {
    this.#session = session
    this.#decoding = decoding
    this.#deliver = deliver
    this.#onError = onError
    this.#holding = holding
  }

  /** Takes a chunk (copied before this returns): undefined when the stream can take more at
   * once, else a Promise that settles when it can. */
  write(chunk) {
    if (this.#closed) throw this.#closed.reason
    // The count comes from the native side: a chunk's own `length` may say anything.
    this.#staged = this.#session.append(ownMemory(chunk))
    if (!this.#running && this.#staged > (this.#holding ? STAGE_LIMIT : 0)) this.#running = this.#pump()
    if (this.#staged <= STAGE_LIMIT) return undefined
    return new Promise((resolve, reject) => {
      this.#room = { resolve, reject }
    })
  }

  /** Emits everything taken so far as decodable data (compression only). */
  flush() {
    return this.#finally(Flush.Block, false)
  }

  /** Ends the stream: the end of the frame, or the check that no frame was left open. */
  end() {
    return this.#finally(Flush.Frame, true)
  }

  /** Frees the session's context (now, or when the running step ends): the stream is gone,
   * and a step or a write under way fails with `reason`. */
  close(reason) {
    this.#closed ??= { reason }
    this.#session.close()
    const room = this.#room
    this.#room = null
    room?.reject(this.#closed.reason)
  }

  async #pump() {
    try {
      while (this.#staged > 0 && !this.#closed) await this.#step(Flush.No, false)
    } catch (error) {
      if (!this.#closed) {
        this.close(error)
        this.#onError(error)
      }
    } finally {
      this.#running = null
    }
  }

  async #finally(flush, last) {
    while (this.#running) await this.#running
    if (this.#closed) throw this.#closed.reason
    await this.#step(flush, last)
  }

  async #step(flush, last) {
    for (;;) {
      // The step takes everything staged. A writer waiting for room may go on while it runs,
      // unless the decoder still holds input from before: then this step drains that first,
      // and the input held stays bounded however far it expands and however slow the reader.
      const draining = this.#decoding && this.#session.more
      this.#staged = 0
      if (!draining) this.#release()
      const step = this.#decoding ? this.#session.push(last) : this.#session.push(flush)
      const output = materialize(await step)
      if (this.#closed) throw this.#closed.reason
      if (output.length) await this.#deliver(output)
      if (this.#closed) throw this.#closed.reason
      if (!this.#decoding || !this.#session.more) {
        this.#release()
        return
      }
    }
  }

  /** Lets a writer waiting for room go on. */
  #release() {
    const room = this.#room
    this.#room = null
    room?.resolve()
  }
}

/** Calls `callback` when `step` settles, outside the Promise chain: whatever the callback runs
 * (a write callback of the caller's) and throws is an uncaught exception, as with node:zlib,
 * not an unhandled rejection. `await`, not `.then`, so a patched `Promise.prototype.then`
 * cannot keep the callback from being called. */
async function done(step, callback) {
  try {
    await step
  } catch (error) {
    process.nextTick(callback, error)
    return
  }
  process.nextTick(callback)
}

module.exports = { done, Engine, FLUSH }
