// The floor every binding is measured against: libzstd called from native code with no Node
// work per call (crates/addon/src/exports/floor.rs, built by npm run build:bench), measured in the same process and the same interleaving as the
// contenders, so that a ratio to it is taken under the same conditions.
import { createRequire } from 'node:module'

const binding = createRequire(import.meta.url)('../index.js')

export const FLOOR = 'raw libzstd, reused context'
export const FLOOR_FRESH = 'raw libzstd, fresh context per call'
/** The floor measured again after the contenders: the floor is the faster of the two. */
export const FLOOR_AGAIN = `${FLOOR} (again)`
/** Calls per benchmark iteration: a whole cycle through the payloads, so the one Node-API call
 * that starts it is spread over many. */
export const FLOOR_BATCH = 15
export const isFloor = (name) => name === FLOOR || name === FLOOR_FRESH || name === FLOOR_AGAIN

/** Floor contenders for a sync mode: `compressing` payloads at `level`, or decompressing frames. */
export function floors(compressing, payloads, level) {
  const sizes = Uint32Array.from(payloads, (payload) => payload.length)
  const joined = Buffer.concat(payloads)
  const make = (fresh) => {
    const floor = new binding.Floor(compressing, joined, sizes, level, fresh)
    return () => floor.run(FLOOR_BATCH)
  }
  return { [FLOOR]: make(false), [FLOOR_FRESH]: make(true) }
}
