'use strict'
// Argument checks, with Node's error codes (errors.js words them as Node does). Each returns the
// value it was given, checked.

const { invalidType, outOfRange } = require('./errors.js')

function integer(value, name, min, max) {
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  if (!Number.isInteger(value) || value < min || value > max) throw outOfRange(name, `an integer >= ${min} and <= ${max}`, value)
  return value
}

/** An integer from `min` to `max`, or `Infinity` for no bound. */
function integerOrInfinity(value, name, min, max) {
  if (value === Number.POSITIVE_INFINITY) return value
  if (typeof value !== 'number') throw invalidType(name, 'of type number', value)
  if (!Number.isInteger(value) || value < min || value > max) {
    throw outOfRange(name, `an integer >= ${min} and <= ${max}, or Infinity`, value)
  }
  return value
}

function boolean(value, name) {
  if (typeof value !== 'boolean') throw invalidType(name, 'of type boolean', value)
  return value
}

/** An object of options, or undefined for none (undefined or null). */
function optionsObject(value, name, expected) {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'object') throw invalidType(name, expected, value)
  return value
}

/** The `signal` option: as Node takes it, anything with `aborted` and addEventListener (a signal
 * from another realm too). */
function signal(value) {
  if (value === undefined) return undefined
  if (value === null || typeof value !== 'object' || !('aborted' in value) || typeof value.addEventListener !== 'function') {
    throw invalidType('options.signal', 'an instance of AbortSignal', value)
  }
  return value
}

module.exports = { boolean, integer, integerOrInfinity, optionsObject, signal }
