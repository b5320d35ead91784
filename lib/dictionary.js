'use strict'
// Dictionaries: the Dictionary class (a prepared native dictionary behind a private field, which
// no other object can forge) and trainDictionary.

const { binding } = require('./binding.js')
const { invalidType } = require('./errors.js')
const { DEFAULT_LEVEL, level } = require('./parameters.js')
const { bufferFrom, concat } = require('#platform')
const { bytes } = require('./primordials.js')
const { materialize } = require('./results.js')
const { integer, optionsObject } = require('./validate.js')

let preparedOf // (value) => the native dictionary of a Dictionary, or undefined

/**
 * A zstd dictionary (from trainDictionary, or `zstd --train`), prepared once for any number of
 * calls on any thread. Pass it as the `dictionary` option; frames made with it need it to be
 * decompressed.
 */
class Dictionary {
  #prepared

  constructor(data) {
    this.#prepared = new binding.PreparedDictionary(bytes(data, 'data'))
  }

  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  get id() {
    return this.#prepared.id
  }

  /** The dictionary's size in bytes. */
  get size() {
    return this.#prepared.size
  }

  /**
   * Frees the dictionary's native memory now (its bytes and digested forms), instead of when it
   * is collected; calls and streams already using it keep it until they end. Later calls with it
   * fail (ERR_INVALID_STATE). `using dictionary = new Dictionary(bytes)` calls it at the end of
   * the block.
   */
  [Symbol.dispose]() {
    this.#prepared.release()
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Dictionary { id: ${this.id}, size: ${this.size} }`
  }

  static {
    // A private field cannot be forged: an object made to look like a Dictionary has none.
    preparedOf = (value) => (value !== null && typeof value === 'object' && #prepared in value ? value.#prepared : undefined)
  }
}

/**
 * Trains a dictionary on `samples` (typically thousands of small, similar records, about 100
 * times the dictionary size in all) for `new Dictionary(...)` or `zstd -D`.
 */
function trainDictionary(samples, options) {
  if (!Array.isArray(samples)) throw invalidType('samples', 'an instance of Array', samples)
  const object = optionsObject(options, 'options', 'an object of training options')
  const size = object?.size === undefined ? 112_640 : integer(object.size, 'options.size', 256, 2 ** 30)
  const tunedFor = object?.level === undefined ? DEFAULT_LEVEL : level(object.level, 'options.level')
  // Each element is read once and copied at once, so that reading a later one (a getter) cannot
  // change an earlier one.
  const copies = []
  for (let i = 0; i < samples.length; i++) copies.push(bufferFrom(bytes(samples[i], `samples[${i}]`)))
  const sizes = Uint32Array.from(copies, (copy) => copy.length)
  return materialize(binding.trainDictionary(concat(copies), sizes, size, tunedFor))
}

module.exports = { Dictionary, preparedOf, trainDictionary }
