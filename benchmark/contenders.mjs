// Everything the benchmark compares, behind one shape: { compressSync, decompressSync, compress,
// decompress }, each optional (a library without a sync or a Promise API lacks it), all at level 3.
import { createRequire } from 'node:module'
import { promisify } from 'node:util'
import * as zlib from 'node:zlib'

const requireRoot = createRequire(new URL('../package.json', import.meta.url))
export const requirePeer = createRequire(new URL('./peers/package.json', import.meta.url))
export const LEVEL = 3

const zstdPool = requireRoot('./main.js')
const defaultMaxIdle = zstdPool.poolStats().compressors.maxIdleContexts

/** Libraries that could not be loaded, with the reason, for the report. */
export const skipped = []

function peer(name, make) {
  try {
    return make(requirePeer(name))
  } catch (error) {
    skipped.push({ name, reason: error.message.split('\n')[0] })
    return undefined
  }
}

const fromCallbacks = (fn, options) => {
  const call = promisify(fn)
  return (data) => call(data, options)
}

/** The zstd libraries, by name; `ours` marks zstd-pool's own rows. */
export async function loadContenders() {
  const contenders = {
    'zstd-pool': {
      ours: true,
      compressSync: (data) => zstdPool.compressSync(data, LEVEL),
      decompressSync: (data) => zstdPool.decompressSync(data),
      compress: (data) => zstdPool.compress(data, LEVEL),
      decompress: (data) => zstdPool.decompress(data),
    },
    'zstd-pool, pooling off': {
      ours: true,
      // A fresh context per call: the "before" of context pooling.
      setup: () => zstdPool.configurePool({ maxIdleContexts: 0 }),
      teardown: () => zstdPool.configurePool({ maxIdleContexts: defaultMaxIdle }),
      compressSync: (data) => zstdPool.compressSync(data, LEVEL),
      decompressSync: (data) => zstdPool.decompressSync(data),
      compress: (data) => zstdPool.compress(data, LEVEL),
      decompress: (data) => zstdPool.decompress(data),
    },
  }
  if (typeof zlib.zstdCompressSync === 'function') {
    const params = { params: { [zlib.constants.ZSTD_c_compressionLevel]: LEVEL } }
    contenders['node:zlib zstd'] = {
      compressSync: (data) => zlib.zstdCompressSync(data, params),
      decompressSync: (data) => zlib.zstdDecompressSync(data),
      compress: fromCallbacks(zlib.zstdCompress, params),
      decompress: fromCallbacks(zlib.zstdDecompress),
    }
  } else {
    skipped.push({ name: 'node:zlib zstd', reason: `not in Node ${process.version} (added in 22.15 / 23.8)` })
  }
  Object.assign(contenders, {
    'zstd-napi': peer('zstd-napi', (lib) => ({
      compressSync: (data) => lib.compress(data, { compressionLevel: LEVEL }),
      decompressSync: (data) => lib.decompress(data),
    })),
    '@mongodb-js/zstd': peer('@mongodb-js/zstd', (lib) => ({
      // 1.2.2 ignores the level argument (it always uses libzstd's default, 3).
      compress: (data) => lib.compress(data, LEVEL),
      decompress: (data) => lib.decompress(data),
    })),
    '@toondepauw/node-zstd': peer('@toondepauw/node-zstd', (lib) => {
      const encoder = new lib.Encoder(LEVEL)
      const decoder = new lib.Decoder()
      return {
        compressSync: (data) => encoder.encodeSync(data),
        decompressSync: (data) => decoder.decodeSync(data),
        compress: (data) => encoder.encode(data),
        decompress: (data) => decoder.decode(data),
      }
    }),
    '@bokuweb/zstd-wasm': peer('@bokuweb/zstd-wasm', (lib) => ({
      init: () => lib.init(),
      compressSync: (data) => lib.compress(data, LEVEL),
      decompressSync: (data) => lib.decompress(data),
    })),
    fzstd: peer('fzstd', (lib) => ({ decompressSync: (data) => lib.decompress(data) })),
  })
  for (const [name, contender] of Object.entries(contenders)) {
    if (!contender) delete contenders[name]
    else await contender.init?.()
  }
  return contenders
}

/** gzip and brotli from node:zlib, for context: not zstd, so never "the best peer". */
export const references = {
  'node:zlib gzip-6': {
    compressSync: (data) => zlib.gzipSync(data, { level: 6 }),
    decompressSync: (data) => zlib.gunzipSync(data),
    compress: fromCallbacks(zlib.gzip, { level: 6 }),
    decompress: fromCallbacks(zlib.gunzip),
    encode: (data) => zlib.gzipSync(data, { level: 6 }),
  },
  'node:zlib brotli-4': {
    compressSync: (data) => zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
    decompressSync: (data) => zlib.brotliDecompressSync(data),
    compress: fromCallbacks(zlib.brotliCompress, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
    decompress: fromCallbacks(zlib.brotliDecompress),
    encode: (data) => zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
  },
}
