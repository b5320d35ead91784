'use strict'
// Dictionaries: the Dictionary class (a prepared native dictionary, as prepared.js keeps it) and
// trainDictionary.

const { binding } = require('./binding.js')
const { invalidType } = require('./errors.js')
const { DEFAULT_LEVEL, level } = require('./parameters.js')
const { bufferFrom, concat } = require('#platform')
const { bytes } = require('./primordials.js')
const { Prepared, nativeOf } = require('./prepared.js')
const { materialize } = require('./results.js')
const { integer, optionsObject } = require('./validate.js')

/**
 * A zstd dictionary (from trainDictionary, or `zstd --train`), prepared once for any number of
 * calls on any thread. Pass it as the `dictionary` option; frames made with it need it to be
 * decompressed. Its native memory holds its bytes and their digested forms.
 */
class Dictionary extends Prepared {
  #id

  constructor(data) {
    const native = new binding.PreparedDictionary(bytes(data, 'data'))
    super(native, KIND)
    this.#id = native.id
  }

  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  get id() {
    return this.#id
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return `Dictionary { id: ${this.id}, size: ${this.size} }`
  }
}

const KIND = 'dictionary'

/** The native dictionary of a Dictionary, or undefined. */
function preparedOf(value) {
  return nativeOf(value, KIND)
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
