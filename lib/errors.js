'use strict'
// Argument errors worded as Node's own (its internal/errors is not reachable from a package),
// shared by every face of the package (main.js, zlib.js, browser.mjs). Internal: not part of the public API.

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

/** An option that may not be given with another. */
function incompatible(first, second) {
  const error = new TypeError(`Option "${first}" cannot be used in combination with option "${second}"`)
  return coded(error, 'ERR_INCOMPATIBLE_OPTION_PAIR')
}

/** A `params` key that names no parameter (node:zlib's wording and code). */
function invalidParam(key) {
  return coded(new RangeError(`${key} is not a valid zstd parameter`), 'ERR_ZSTD_INVALID_PARAM')
}

/** What the platform cannot do (the WebAssembly build has no multi-threading). */
function unavailable(message) {
  return coded(new Error(message), 'ERR_FEATURE_UNAVAILABLE_ON_PLATFORM')
}

module.exports = { coded, describe, incompatible, invalidParam, invalidType, invalidValue, outOfRange, safely, unavailable }
