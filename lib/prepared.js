'use strict'
// What Dictionary and Prefix share: bytes copied once into native memory, for any number of calls
// on any thread, behind a private field (which no other object can forge, and checking for which
// runs no code of the value's: no getter, no Proxy trap), freed by Symbol.dispose or once collected.

/** (value, kind) => the native copy of a Prepared of that kind, or undefined. */
let nativeOf

/** How many times a Prepared was disposed so far: what lib/options.js compares to drop the sets of
 * dictionaries it keeps, so that a disposed Dictionary fails later calls as it does alone. */
let disposals = 0

class Prepared {
  #native
  #kind

  /** `native` is the binding's object (PreparedDictionary, PreparedPrefix); `kind` names it. */
  constructor(native, kind) {
    this.#native = native
    this.#kind = kind
  }

  /** The size in bytes of what was copied. */
  get size() {
    return this.#native.size
  }

  /**
   * Frees the native copy now, instead of when this is collected; calls (and streams) already
   * using it keep it until they end. Later calls with it fail (ERR_INVALID_STATE). `using
   * prepared = new Dictionary(bytes)` (or `new Prefix(bytes)`) calls it at the end of the block.
   */
  [Symbol.dispose]() {
    disposals++
    this.#native.release()
  }

  static {
    nativeOf = (value, kind) =>
      value !== null && typeof value === 'object' && #native in value && value.#kind === kind ? value.#native : undefined
  }
}

module.exports = { Prepared, disposalCount: () => disposals, nativeOf }
