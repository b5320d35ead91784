// zstd-pool in a browser: the WebAssembly build, with the one-shot API of the Node entry.
// Results are Uint8Arrays. See docs/wasm.md. The inputs, options and classes are the Node
// entry's (common.d.ts).
import type { CompressOptions, DecompressOptions, Input } from './common.js'

export type { CompressOptions, CompressParameters, CompressParams, DecompressOptions, Input, Strategy } from './common.js'
export { Dictionary, Prefix } from './common.js'

/** Compresses `data` into one zstd frame that records its content size. `level` defaults to 3. */
export function compressSync(data: Input, level?: number | CompressOptions): Uint8Array<ArrayBuffer>
/** Compresses `data` on the module's workers (or at once, when it is small). Every error is a rejection. */
export function compress(data: Input, level?: number | CompressOptions): Promise<Uint8Array<ArrayBuffer>>
/** Decompresses every frame in `data`: frames with or without a recorded size, concatenated frames, skippable frames. */
export function decompressSync(data: Input, options?: DecompressOptions): Uint8Array<ArrayBuffer>
/** Decompresses `data` on the module's workers (or at once, when it is small). Every error is a rejection. */
export function decompress(data: Input, options?: DecompressOptions): Promise<Uint8Array<ArrayBuffer>>

/** The lowest (fastest) compression level libzstd accepts. */
export const MIN_LEVEL: number
/** The highest compression level libzstd accepts (slowest, smallest output). */
export const MAX_LEVEL: number
/** The level used when none is given (3). */
export const DEFAULT_LEVEL: number
