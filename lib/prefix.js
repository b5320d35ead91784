'use strict'
// Prefix: a patch-from reference (typically the old version of the data) copied once into native
// memory and shared by every call that names it, on every thread. An async call given the
// reference as plain bytes copies it for its work (2,000 calls in flight against one 1 MiB
// reference held 2 GB); one given a Prefix holds the same copy.

const { binding } = require('./binding.js')
const { Prepared, nativeOf } = require('./prepared.js')
const { bytes } = require('./primordials.js')

/**
 * A reference for patch-from (`zstd --patch-from`), copied once for any number of compress and
 * decompress calls on any thread. Pass it as the `prefix` option.
 */
class Prefix extends Prepared {
  constructor(data) {
    super(new binding.PreparedPrefix(bytes(data, 'data')), KIND)
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Prefix { size: ${this.size} }`
  }
}

const KIND = 'prefix'

/** The native prefix of a Prefix, or undefined. */
function preparedPrefixOf(value) {
  return nativeOf(value, KIND)
}

module.exports = { Prefix, preparedPrefixOf }
