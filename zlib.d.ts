// The API of zstd-pool/zlib (zlib.js, zlib.mjs): node:zlib's zstd functions, classes and constants, over zstd-pool.
import type { Transform, TransformOptions } from 'node:stream'
import type { Dictionary } from './main'

/** What node:zlib's zstd functions take: a string (encoded as UTF-8), any binary view, or an ArrayBuffer. */
export type InputType = string | ArrayBuffer | SharedArrayBuffer | NodeJS.ArrayBufferView

export interface ZstdOptions extends Pick<TransformOptions, 'highWaterMark' | 'signal'> {
  /** The flush applied after each write: `constants.ZSTD_e_continue` (the default) or `ZSTD_e_flush` (`ZSTD_e_end` flushes too). */
  flush?: number
  /** Checked as node:zlib checks it (0 to 2); the frame always ends at the end of the input. */
  finishFlush?: number
  /** The largest output chunk of a stream, at least 64. Default: as the core makes them (up to 1 MiB). */
  chunkSize?: number
  /**
   * libzstd's parameters, keyed by `constants.ZSTD_c_*` (compression) or `constants.ZSTD_d_windowLogMax` (decompression), as
   * node:zlib takes them. Booleans count as 1 and 0.
   */
  params?: Record<number, number | boolean>
  /** Fail with a `RangeError` (`code: 'ERR_BUFFER_TOO_LARGE'`) rather than produce more than this many bytes. */
  maxOutputLength?: number
  /** The one-shot functions return `{ buffer, engine }` instead of the buffer. */
  info?: boolean
  /**
   * The dictionary's bytes, as node:zlib takes them (prepared once per buffer and kept while the buffer lives), or a
   * zstd-pool `Dictionary`, used as it is. One only, as node:zlib takes it: to decode frames made with several, use
   * zstd-pool's `dictionaries` option (docs/dictionaries.md).
   */
  dictionary?: NodeJS.ArrayBufferView | ArrayBuffer | Dictionary
  /** Compression: the size the input will have, recorded in the frame header. The call or stream fails if it differs. */
  pledgedSrcSize?: number
  /** Checked as node:zlib checks it; bytes that are not a frame after the last frame always fail (see docs/zlib.md). */
  rejectGarbageAfterEnd?: boolean
}

export declare const constants: {
  readonly ZSTD_COMPRESS: 10
  readonly ZSTD_DECOMPRESS: 11
  readonly ZSTD_e_continue: 0
  readonly ZSTD_e_flush: 1
  readonly ZSTD_e_end: 2
  readonly ZSTD_fast: 1
  readonly ZSTD_dfast: 2
  readonly ZSTD_greedy: 3
  readonly ZSTD_lazy: 4
  readonly ZSTD_lazy2: 5
  readonly ZSTD_btlazy2: 6
  readonly ZSTD_btopt: 7
  readonly ZSTD_btultra: 8
  readonly ZSTD_btultra2: 9
  readonly ZSTD_c_compressionLevel: 100
  readonly ZSTD_c_windowLog: 101
  readonly ZSTD_c_hashLog: 102
  readonly ZSTD_c_chainLog: 103
  readonly ZSTD_c_searchLog: 104
  readonly ZSTD_c_minMatch: 105
  readonly ZSTD_c_targetLength: 106
  readonly ZSTD_c_strategy: 107
  readonly ZSTD_c_enableLongDistanceMatching: 160
  readonly ZSTD_c_ldmHashLog: 161
  readonly ZSTD_c_ldmMinMatch: 162
  readonly ZSTD_c_ldmBucketSizeLog: 163
  readonly ZSTD_c_ldmHashRateLog: 164
  readonly ZSTD_c_contentSizeFlag: 200
  readonly ZSTD_c_checksumFlag: 201
  readonly ZSTD_c_dictIDFlag: 202
  readonly ZSTD_c_nbWorkers: 400
  readonly ZSTD_c_jobSize: 401
  readonly ZSTD_c_overlapLog: 402
  readonly ZSTD_d_windowLogMax: 100
  readonly ZSTD_CLEVEL_DEFAULT: 3
  readonly ZSTD_error_no_error: 0
  readonly ZSTD_error_GENERIC: 1
  readonly ZSTD_error_prefix_unknown: 10
  readonly ZSTD_error_version_unsupported: 12
  readonly ZSTD_error_frameParameter_unsupported: 14
  readonly ZSTD_error_frameParameter_windowTooLarge: 16
  readonly ZSTD_error_corruption_detected: 20
  readonly ZSTD_error_checksum_wrong: 22
  readonly ZSTD_error_literals_headerWrong: 24
  readonly ZSTD_error_dictionary_corrupted: 30
  readonly ZSTD_error_dictionary_wrong: 32
  readonly ZSTD_error_dictionaryCreation_failed: 34
  readonly ZSTD_error_parameter_unsupported: 40
  readonly ZSTD_error_parameter_combination_unsupported: 41
  readonly ZSTD_error_parameter_outOfBound: 42
  readonly ZSTD_error_tableLog_tooLarge: 44
  readonly ZSTD_error_maxSymbolValue_tooLarge: 46
  readonly ZSTD_error_maxSymbolValue_tooSmall: 48
  readonly ZSTD_error_stabilityCondition_notRespected: 50
  readonly ZSTD_error_stage_wrong: 60
  readonly ZSTD_error_init_missing: 62
  readonly ZSTD_error_memory_allocation: 64
  readonly ZSTD_error_workSpace_tooSmall: 66
  readonly ZSTD_error_dstSize_tooSmall: 70
  readonly ZSTD_error_srcSize_wrong: 72
  readonly ZSTD_error_dstBuffer_null: 74
  readonly ZSTD_error_noForwardProgress_destFull: 80
  readonly ZSTD_error_noForwardProgress_inputEmpty: 82
}

/** What node:zlib's zstd streams have beyond a Transform. */
export interface ZstdStream {
  /** Input bytes taken so far. */
  bytesWritten: number
  /**
   * Compression: emits everything written so far as decodable data (`kind` defaults to `constants.ZSTD_e_flush`).
   * Decompression: waits until everything written so far is decoded and pushed.
   */
  flush(kind?: number, callback?: () => void): void
  flush(callback?: () => void): void
  /** Destroys the stream; `callback` is called once it has closed, as `stream.finished` calls it. */
  close(callback?: (error?: Error | null) => void): void
}

/** node:zlib's zstd compression stream, over zstd-pool's (`createCompressStream`). */
export interface ZstdCompress extends ZstdStream {}
export declare class ZstdCompress extends Transform {
  constructor(options?: ZstdOptions)
}

/** node:zlib's zstd decompression stream, over zstd-pool's (`createDecompressStream`). */
export interface ZstdDecompress extends ZstdStream {}
export declare class ZstdDecompress extends Transform {
  constructor(options?: ZstdOptions)
}

export declare function createZstdCompress(options?: ZstdOptions): ZstdCompress
export declare function createZstdDecompress(options?: ZstdOptions): ZstdDecompress

export type CompressCallback = (error: Error | null, result: Buffer) => void

/** A one-shot function's callback forms, as node:zlib's; `info: true` hands back the `Engine` that did the work. */
export interface ZstdCallbackFunction<Engine> {
  (buffer: InputType, callback: CompressCallback): void
  (
    buffer: InputType,
    options: ZstdOptions & { info: true },
    callback: (error: Error | null, result: { buffer: Buffer; engine: Engine }) => void,
  ): void
  (buffer: InputType, options: ZstdOptions, callback: CompressCallback): void
  /** What `util.promisify` makes of it (as @types/node types node:zlib's). */
  __promisify__(buffer: InputType, options: ZstdOptions & { info: true }): Promise<{ buffer: Buffer; engine: Engine }>
  __promisify__(buffer: InputType, options?: ZstdOptions): Promise<Buffer>
}

/** A one-shot function's sync form, as node:zlib's. */
export interface ZstdSyncFunction<Engine> {
  (buffer: InputType, options: ZstdOptions & { info: true }): { buffer: Buffer; engine: Engine }
  (buffer: InputType, options?: ZstdOptions): Buffer
}

export declare const zstdCompress: ZstdCallbackFunction<ZstdCompress>
export declare const zstdCompressSync: ZstdSyncFunction<ZstdCompress>
export declare const zstdDecompress: ZstdCallbackFunction<ZstdDecompress>
export declare const zstdDecompressSync: ZstdSyncFunction<ZstdDecompress>
