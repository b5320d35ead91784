// The API of zstd-pool/http (http.js, http.mjs): compressed HTTP responses for node:http, Express, Connect and Fastify,
// and zstd request bodies decoded (request-decoding.js).
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Readable } from 'node:stream'
import type { BrotliOptions, ZlibOptions } from 'node:zlib'
import type { CompressStreamOptions } from './main'

/** A content coding the middleware answers with. */
export type Encoding = 'zstd' | 'br' | 'gzip'

export interface CompressionOptions {
  /** Bodies known to be smaller than this many bytes (by `Content-Length`, or given whole to `end()`) go as they are. Default: 1024. */
  threshold?: number
  /** The codings offered, in the server's order of preference (the client's q-values come first). Default: `['zstd', 'br', 'gzip']`. */
  encodings?: readonly Encoding[]
  /** Whether to compress a response (once its headers are set); default: `compressible`, by `Content-Type`. */
  filter?: (req: IncomingMessage, res: ServerResponse) => boolean
  /** The zstd stream's options. Default: level 3. */
  zstd?: CompressStreamOptions
  /** node:zlib's Brotli options. Default: quality 4 (`BROTLI_PARAM_QUALITY`), as fast as gzip's default. */
  brotli?: BrotliOptions
  /** node:zlib's gzip options. Default: node:zlib's (level 6). */
  gzip?: ZlibOptions
  /**
   * Compression dictionaries (RFC 9842): each is served at `path`, marked for the paths its `match` covers, and a request
   * for one of those that holds it (`Available-Dictionary`) and accepts `dcz` gets the body compressed against it.
   */
  dictionaries?: readonly DictionaryEntry[]
}

export interface DictionaryEntry {
  /** Where the middleware serves the dictionary, a path starting with `/`. */
  path: string
  /** The paths it applies to: a path starting with `/`, where `*` matches any characters (`/api/*`, `/js/app.*.js`). */
  match: string
  /** Its bytes, raw content (an earlier version of the resources it applies to, typically). */
  data: string | ArrayBuffer | NodeJS.ArrayBufferView
  /** An id the browser sends back with it (`Dictionary-ID`), at most 1024 printable ASCII characters. */
  id?: string
  /** The dictionary response's Content-Type. Default: `application/octet-stream`. */
  type?: string
  /** How long a browser keeps it, in seconds (`Cache-Control: max-age`). Default: one week. */
  maxAge?: number
}

/** The response, as the middleware leaves it: `flush()` sends what was written so far to the client. */
export interface CompressedResponse extends ServerResponse {
  flush(): void
}

/**
 * A middleware that compresses responses as the request's `Accept-Encoding` allows: `app.use(compression())` (Express,
 * Connect), or `compression()(req, res, () => handler(req, res))` (node:http).
 */
export declare function compression(
  options?: CompressionOptions,
): (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void

/** The default filter: whether the response's `Content-Type` is text, JSON, XML, JavaScript, SVG or WebAssembly. */
export declare function compressible(req: IncomingMessage, res: ServerResponse): boolean

/** The limits of a decoded request body. */
export interface DecompressRequestOptions {
  /** The most bytes a request body may decode to; past it, a 413. Default: 1 MiB (Fastify's default bodyLimit). */
  maxOutputLength?: number
  /** The largest window (as a power of two) a request's frames may use; past it, a 413. Default: 23 (8 MB, what browsers decode). */
  windowLogMax?: number
}

/**
 * A middleware that decodes request bodies sent with `Content-Encoding: zstd` as they arrive, in place, for the readers
 * after it: `app.use(decompressRequest())` before `express.json()`. A body that decodes past the limits is an error with
 * `status` 413, one that is not zstd an error with `status` 400, emitted on the request (`express.json` and `for await`
 * pass it on); a request with no `'error'` listener is destroyed instead. HTTP/1 requests only.
 */
export declare function decompressRequest(
  options?: DecompressRequestOptions,
): (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void

/** Fastify's form of `decompressRequest`: a `preParsing` hook, `fastify.addHook('preParsing', decompressPayload())`. */
export declare function decompressPayload(
  options?: DecompressRequestOptions,
): (
  request: { headers: IncomingMessage['headers'] },
  reply: unknown,
  payload: Readable,
  done: (error: Error | null, payload?: Readable) => void,
) => void
