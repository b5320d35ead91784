// zstd-pool in a browser: the WebAssembly build, with the one-shot API of the Node entry.
// Results are Uint8Arrays. See docs/wasm.md.

export type Input = ArrayBufferView | ArrayBuffer | SharedArrayBuffer | string

export interface CompressOptions {
  /** MIN_LEVEL to MAX_LEVEL; 3 by default. */
  level?: number
  /** Record a checksum of the content in the frame. Default: false, or true when `prefix` is given. */
  checksum?: boolean
  /** 0 or 1: the WebAssembly build has no multi-threading. */
  workers?: number
  dictionary?: Dictionary
  /** Patch-from: compress against this reference (the old version); decompressing needs the same bytes. Not with `dictionary`. */
  prefix?: Input | Prefix
  /** Promise functions only. */
  signal?: AbortSignal
}

export interface DecompressOptions {
  /** Fail with ERR_BUFFER_TOO_LARGE rather than produce more than this; 2^32 - 1 by default. */
  maxOutputLength?: number
  /** Refuse frames needing a window above 2^windowLogMax bytes: 10 to 30, 27 by default. */
  windowLogMax?: number
  dictionary?: Dictionary
  /** The reference that patch-from frames were made against. */
  prefix?: Input | Prefix
  /** Promise functions only. */
  signal?: AbortSignal
}

export function compressSync(data: Input, level?: number | CompressOptions): Uint8Array<ArrayBuffer>
export function compress(data: Input, level?: number | CompressOptions): Promise<Uint8Array<ArrayBuffer>>
export function decompressSync(data: Input, options?: DecompressOptions): Uint8Array<ArrayBuffer>
export function decompress(data: Input, options?: DecompressOptions): Promise<Uint8Array<ArrayBuffer>>

/** A zstd dictionary (from `zstd --train` or trainDictionary in Node), prepared once. */
export class Dictionary {
  constructor(data: Input)
  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  readonly id: number
  /** The dictionary's size in bytes. */
  readonly size: number
}

/** A patch-from reference copied once into the module's memory, for the `prefix` option of every call. */
export class Prefix {
  constructor(data: Input)
  /** The reference's size in bytes. */
  readonly size: number;
  /** Frees its memory now; later calls with it fail with ERR_INVALID_STATE. */
  [Symbol.dispose](): void
}

export const MIN_LEVEL: number
export const MAX_LEVEL: number
export const DEFAULT_LEVEL: number
