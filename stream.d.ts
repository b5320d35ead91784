import { Transform } from 'node:stream'

import type { CompressStreamOptions, DecompressOptions } from './index'

/** Options of the stream machinery; the rest are zstd's. `signal` aborts (destroys) the stream. */
export interface StreamOptions {
  highWaterMark?: number
  signal?: AbortSignal
}

/** Streams compress single-threaded: `workers` does not apply to them. */
export type CompressStreamSettings = Omit<CompressStreamOptions, 'workers' | 'signal'> & StreamOptions
export type DecompressStreamSettings = Omit<DecompressOptions, 'signal'> & StreamOptions

export declare class ZstdCompress extends Transform {
  constructor(options?: CompressStreamSettings)
  /** Emits everything written so far as decodable data (zstd's flush), for live protocols. */
  flush(callback?: (error?: Error | null) => void): void
}

export declare class ZstdDecompress extends Transform {
  constructor(options?: DecompressStreamSettings)
}

/** A Node Transform stream that compresses into one zstd frame. */
export declare function createCompressStream(options?: CompressStreamSettings): ZstdCompress
/** A Node Transform stream that decompresses zstd frames (with or without a recorded size, concatenated, skippable). */
export declare function createDecompressStream(options?: DecompressStreamSettings): ZstdDecompress

/** Like the web platform's `CompressionStream`, for zstd: `readable.pipeThrough(new ZstdCompressionStream())`. */
export declare class ZstdCompressionStream {
  constructor(options?: Omit<CompressStreamOptions, 'workers' | 'signal'>)
  readonly readable: ReadableStream<Uint8Array>
  readonly writable: WritableStream<BufferSource | string>
}

/** Like the web platform's `DecompressionStream`, for zstd. */
export declare class ZstdDecompressionStream {
  constructor(options?: Omit<DecompressOptions, 'signal'>)
  readonly readable: ReadableStream<Uint8Array>
  readonly writable: WritableStream<BufferSource>
}
