'use strict'
// Prefix: a patch-from reference (typically the old version of the data) copied once into native
// memory and shared by every call that names it, on every thread. An async call given the
// reference as plain bytes copies it for its work (2,000 calls in flight against one 1 MiB
// reference held 2 GB); one given a Prefix holds the same copy.

const { binding } = require('./binding.js')
const { bytes } = require('./primordials.js')

let preparedPrefixOf // (value) => the native prefix of a Prefix, or undefined

/**
 * A reference for patch-from (`zstd --patch-from`), copied once for any number of compress and
 * decompress calls on any thread. Pass it as the `prefix` option.
 */
class Prefix {
  #prepared

  constructor(data) {
    this.#prepared = new binding.PreparedPrefix(bytes(data, 'data'))
  }

  /** The reference's size in bytes. */
  get size() {
    return this.#prepared.size
  }

  /**
   * Frees the native copy now, instead of when the Prefix is collected; calls already using it
   * keep it until they end. Later calls with it fail (ERR_INVALID_STATE). `using prefix = new
   * Prefix(bytes)` calls it at the end of the block.
   */
  [Symbol.dispose]() {
    this.#prepared.release()
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Prefix { size: ${this.size} }`
  }

  static {
    // A private field cannot be forged, and checking for one runs no code of the value's (no
    // getter, no Proxy trap).
    preparedPrefixOf = (value) =>
      value !== null && typeof value === 'object' && #prepared in value ? value.#prepared : undefined
  }
}

module.exports = { Prefix, preparedPrefixOf }
