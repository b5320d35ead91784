// The types zstd-pool's two entries share: the Node entry (main.d.ts) and the browser entry
// (browser.d.mts), built from the same internal modules (lib/). Nothing here names a Node type, so
// that a browser project without @types/node reads it.

declare global {
  // `Symbol.dispose`, as TypeScript's esnext.disposable and @types/node declare it, for projects
  // whose `lib` predates it: the classes here have a `[Symbol.dispose]()` method.
  interface SymbolConstructor {
    readonly dispose: unique symbol
  }
}

/** What can be compressed or decompressed: any binary view (a Buffer among them; read whole), an ArrayBuffer, or a string (encoded as UTF-8). */
export type Input = ArrayBufferView | ArrayBuffer | SharedArrayBuffer | string

export interface CompressOptions extends CompressParameters {
  /** The parameters by `ZSTD_c_*` number, as `node:zlib` takes them. */
  params?: CompressParams
  /** From `MIN_LEVEL` (fastest; negative levels trade ratio for speed) to `MAX_LEVEL`; 0 means the default. Default: `DEFAULT_LEVEL` (3). */
  level?: number
  /**
   * Append a 32-bit checksum of the content to the frame, checked on decompression. Default: false, or true when `prefix`
   * is given (a patch decoded against the wrong reference gives wrong bytes that only the checksum catches).
   */
  checksum?: boolean
  /**
   * libzstd worker threads for large inputs: from two of libzstd's jobs on (4 MiB at level 1, 16 MiB at level 3, 32 MiB at
   * level 9); smaller inputs compress single-threaded, where threads cannot help. 0 and 1 mean single-threaded (one worker
   * would only move the work to a thread the call then waits for). Each such call keeps one libuv thread waiting and runs
   * `workers` threads of its own: keep `workers` at or below the number of cores. Default: 0. The WebAssembly build has no
   * worker threads: there it must be 0 or 1.
   */
  workers?: number
  /** Compress with this dictionary; the frame records its ID, and decompressing it needs the same dictionary. */
  dictionary?: Dictionary
  /**
   * Patch-from (`zstd --patch-from`): compress against this reference, typically the old version of the data, so that
   * what the new version shares with it costs next to nothing. Decompressing needs the same bytes as the `prefix`
   * option. The window is sized to reach the whole reference (the larger of it and the input, as the zstd tool does,
   * with long-distance matching on when the level's match finder cannot see that far) unless `windowLog` or
   * `enableLongDistanceMatching` is set. One-shot and batch calls only (not streams); not with `dictionary`. Turns
   * `checksum` on by default. An async call copies bytes given here for its work; a `Prefix` is one copy shared by every
   * call that names it.
   */
  prefix?: Input | Prefix
  /** Async calls only: aborting rejects the Promise with an `AbortError`, and work still queued never runs. */
  signal?: AbortSignal
}

/** libzstd's match-finding strategies, fastest first; as a number, 1 (`'fast'`) to 9 (`'btultra2'`). */
export type Strategy = 'fast' | 'dfast' | 'greedy' | 'lazy' | 'lazy2' | 'btlazy2' | 'btopt' | 'btultra' | 'btultra2'

/**
 * libzstd's advanced compression parameters (zstd.h's `ZSTD_c_*`, by the same names). Each overrides what the level
 * chose. Bounds are libzstd's own (`ZSTD_cParam_getBounds`) on 64-bit builds (the WebAssembly build is 32-bit: logs stop
 * at 30, `chainLog` at 29, and it has no `jobSize` or `overlapLog`); a value outside them is a `RangeError`. For the
 * numeric ones, 0 means libzstd's default, as not setting it does. Pooled contexts are reset after each call, so a
 * parameter never carries over into another call.
 */
export interface CompressParameters {
  /** The window (history) is 2^windowLog bytes, 10 to 31; decoders need as much memory. Above 27 (128 MiB), decoders must be told: `windowLogMax` here, `--long=N` or `--memory=` for the zstd tool. */
  windowLog?: number
  /** The size of the initial match table, 2^hashLog entries, 6 to 30. */
  hashLog?: number
  /** The size of the match chain table (or binary tree), 2^chainLog entries, 6 to 30 (29 on 32-bit). */
  chainLog?: number
  /** How many searches to make, 2^searchLog, 1 to 30. */
  searchLog?: number
  /** The shortest match looked for, 3 to 7. */
  minMatch?: number
  /** What "long enough" means to the match finder, 0 to 131072; its meaning depends on the strategy. */
  targetLength?: number
  /** The match-finding strategy, by name or as 1 to 9. */
  strategy?: Strategy | number
  /** Aim for compressed blocks of about this many bytes, 1340 to 131072, so that a decoder can start on each sooner (for live streams). */
  targetCBlockSize?: number
  /**
   * Long-distance matching (`zstd --long`): finds repeats far back in a large window, which the regular match finder
   * misses, for large inputs with long-range repetition (backups, logs, VM images, tarballs of similar files). Use it
   * with a large `windowLog` (`zstd --long` uses 27). `false` leaves it to libzstd, which turns it on by itself only for
   * strategies from `btopt` on with `windowLog` 27 or more.
   */
  enableLongDistanceMatching?: boolean
  /**
   * The long-distance matcher's table size, 2^ldmHashLog entries of 8 bytes, 6 to 30. Default: `windowLog` - 7. Unlike the
   * other tables, libzstd does not shrink it for a small input when it is set: 30 allocates and clears 8 GiB per call.
   */
  ldmHashLog?: number
  /** The shortest long-distance match looked for, 4 to 4096. Default: 64. */
  ldmMinMatch?: number
  /** The long-distance matcher's bucket size, 2^ldmBucketSizeLog, 1 to 8. Default: 3. */
  ldmBucketSizeLog?: number
  /** How often the long-distance matcher inserts positions, once per 2^ldmHashRateLog, 0 to 25. Default: `windowLog` - `ldmHashLog`. */
  ldmHashRateLog?: number
  /** Record the content size in the frame header when it is known. Default: true. */
  contentSizeFlag?: boolean
  /** Record the dictionary's ID in frames made with one. Default: true. */
  dictIDFlag?: boolean
  /** With `workers`: the size of each worker's job, 0 (libzstd's choice, 4 windows, at least 1 MiB) or up to 1 GiB (512 MiB on 32-bit); libzstd raises sizes under 512 KiB to that. */
  jobSize?: number
  /** With `workers`: how much of the window each job re-reads from the previous one, 0 (the default) or 1 (none) to 9 (a full window). */
  overlapLog?: number
}

/**
 * `node:zlib`'s form of the same parameters: keyed by the `ZSTD_c_*` numbers of `zstd-pool/zlib`'s (and `node:zlib`'s)
 * `constants`, the level (100), the checksum (201) and the workers (400) included. Unknown keys are a `RangeError` with
 * code `ERR_ZSTD_INVALID_PARAM`. Named options win over `params`.
 */
export type CompressParams = Record<number, number>

export interface DecompressOptions {
  /** Fail with a `RangeError` (`code: 'ERR_BUFFER_TOO_LARGE'`) rather than produce more than this many bytes. Default and maximum: the largest result the build can make (`buffer.constants.MAX_LENGTH`; 2^31 - 1 in the WebAssembly build in a browser). */
  maxOutputLength?: number
  /**
   * Refuse frames that need a window (history) larger than 2^windowLogMax bytes, 10 to 31 (30 in the WebAssembly build). Default: 27 (128 MiB), libzstd's own
   * limit. 23 (8 MiB) is what web browsers accept; frames written with `zstd --long=30` need 30.
   */
  windowLogMax?: number
  /** The dictionary the frames were made with. Frames that record another dictionary's ID fail, naming the ID they need. */
  dictionary?: Dictionary
  /**
   * Dictionaries the frames choose from: each frame is decoded with the one whose ID its header records, and a frame that
   * records none (made without a dictionary, or with `zstd --no-dictID`) with none; a frame whose ID none of them has
   * fails (`code: 'ZSTD_error_dictionary_wrong'`), naming it. At most 1024, each with an ID of its own (not raw
   * content, which has none); an empty array is no dictionary. Read once, when the call is made. Not with `dictionary`
   * or `prefix`.
   */
  dictionaries?: readonly Dictionary[]
  /**
   * The reference that patch-from frames were made against (`prefix` of the compress options, `zstd --patch-from`).
   * Every frame is decoded against it. It raises `windowLogMax` to what compressing against it gives, as the zstd tool
   * lets a reference raise its memory limit. One-shot and batch calls only; not with `dictionary`. A `Prefix` of the
   * same bytes does as well.
   */
  prefix?: Input | Prefix
  /** `node:zlib`'s form of `windowLogMax`: `{ [ZSTD_d_windowLogMax (100)]: n }`. `windowLogMax` wins. */
  params?: Record<number, number>
  /** Async calls only: aborting rejects the Promise with an `AbortError`, and work still queued never runs. */
  signal?: AbortSignal
}

/**
 * A zstd dictionary (from `trainDictionary`, or `zstd --train`), prepared once for any number of calls on any thread. Pass
 * it as the `dictionary` option of the compress and decompress functions; frames made with it need it to be decompressed.
 */
export declare class Dictionary {
  /** Prepares `data` (its bytes are copied). Fails if it is empty or its tables are corrupt. */
  constructor(data: Input)
  /** The dictionary ID that frames made with it record; 0 for raw content, which has none. */
  readonly id: number
  /** The dictionary's size in bytes. */
  readonly size: number;
  /**
   * Frees the native memory now instead of when the Dictionary is collected (calls and streams already using it keep it
   * until they end); later calls with it fail with `ERR_INVALID_STATE`. `using dictionary = new Dictionary(bytes)` calls it.
   */
  [Symbol.dispose](): void
}

/**
 * A patch-from reference (typically the old version of the data), copied once into native memory and shared by every
 * compress and decompress call that names it as `prefix`, on every thread. An async call given the reference as bytes
 * copies them for its work, one copy per call in flight; with a `Prefix`, no call copies it.
 */
export declare class Prefix {
  /** Copies `data` (a string is encoded as UTF-8). */
  constructor(data: Input)
  /** The reference's size in bytes. */
  readonly size: number;
  /**
   * Frees the native copy now instead of when the Prefix is collected (calls already using it keep it until they end);
   * later calls with it fail with `ERR_INVALID_STATE`. `using prefix = new Prefix(bytes)` calls it.
   */
  [Symbol.dispose](): void
}
