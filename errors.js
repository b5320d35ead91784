'use strict'
// Argument errors worded as Node's own (its internal/errors is not reachable from a package),
// shared by the package's entries (main.js, zlib.js). Internal: not part of the public API.

function describe(value) {
  if (value === null || value === undefined) return String(value)
  if (typeof value === 'function') return `function ${safely(() => value.name) || '<anonymous>'}`
  if (typeof value === 'object') {
    const name = safely(() => value.constructor?.name)
    return name ? `an instance of ${name}` : 'an object'
  }
  if (typeof value === 'string') {
    const shown = value.length > 28 ? `${value.slice(0, 25)}...` : value
    return `type string (${shown.includes("'") ? JSON.stringify(shown) : `'${shown}'`})`
  }
  if (typeof value === 'symbol') return `type symbol (${String(value)})`
  return `type ${typeof value} (${typeof value === 'bigint' ? `${value}n` : String(value)})`
}

/** Reads something a user object provides, which may throw (a getter, a Proxy trap). */
function safely(read) {
  try {
    return read()
  } catch {
    return undefined
  }
}

/** `error` with its `code` (and other properties) defined as its own, so that no setter on
 * `Error.prototype` runs. */
function coded(error, code, properties) {
  return Object.defineProperties(error, {
    code: { value: code, writable: true, enumerable: true, configurable: true },
    ...properties,
  })
}

function invalidType(name, expected, value) {
  const error = new TypeError(
    `The "${name}" ${name.includes('.') ? 'property' : 'argument'} must be ${expected}. Received ${describe(value)}`,
  )
  return coded(error, 'ERR_INVALID_ARG_TYPE')
}

function invalidValue(name, expected, value) {
  const error = new TypeError(
    `The ${name.includes('.') ? 'property' : 'argument'} '${name}' must be ${expected}. Received ${describe(value)}`,
  )
  return coded(error, 'ERR_INVALID_ARG_VALUE')
}

function outOfRange(name, expected, value) {
  const error = new RangeError(`The value of "${name}" is out of range. It must be ${expected}. Received ${String(value)}`)
  return coded(error, 'ERR_OUT_OF_RANGE')
}

module.exports = { coded, describe, invalidType, invalidValue, outOfRange, safely }
