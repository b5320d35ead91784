'use strict'
// The process-wide context pools' settings and counters (the pools themselves are native).

const { binding, capabilities } = require('./binding.js')
const { invalidType } = require('./errors.js')
const { integer, integerOrInfinity } = require('./validate.js')

/** The longest idle timeout short of none: what `setTimeout` takes (about 24.8 days). */
const MAX_IDLE_TIMEOUT_MS = 2 ** 31 - 1

/** The counters of the process-wide context pools (shared by every thread and worker). */
function poolStats() {
  return binding.poolStats()
}

/**
 * Sets the pools' bounds: how many idle contexts each keeps (0 turns pooling off) and how many
 * bytes they may hold, how many multi-threaded contexts stay cached, and how long an idle
 * context stays before it is freed. What is beyond the new bounds is freed at once; an option
 * not given is left as it is. Returns the resulting counters.
 */
function configurePool(options) {
  if (options === null || typeof options !== 'object') throw invalidType('options', 'an object of pool options', options)
  // Each option is read once, before any is applied.
  const { maxIdleContexts, maxIdleBytes, maxIdleMultithreadedContexts, idleTimeoutMs } = options
  const optional = (value, check) => (value === undefined ? undefined : check(value))
  const contexts = optional(maxIdleContexts, (value) =>
    integer(value, 'options.maxIdleContexts', 0, capabilities.maxIdleContextsLimit),
  )
  const bytes = optional(maxIdleBytes, (value) => integerOrInfinity(value, 'options.maxIdleBytes', 0, Number.MAX_SAFE_INTEGER))
  const multithreaded = optional(maxIdleMultithreadedContexts, (value) =>
    integer(value, 'options.maxIdleMultithreadedContexts', 0, capabilities.maxIdleMultithreadedContextsLimit),
  )
  const timeout = optional(idleTimeoutMs, (value) => integerOrInfinity(value, 'options.idleTimeoutMs', 1, MAX_IDLE_TIMEOUT_MS))
  return binding.configurePool(contexts, bytes, multithreaded, timeout)
}

module.exports = { configurePool, poolStats }
