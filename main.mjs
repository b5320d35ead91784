// The ES module entry: the API of main.js as named exports (and as the default export).
// A static import, not createRequire: bundlers follow it (esbuild does not follow createRequire), and
// Node gives the same module.exports object that require('zstd-pool') returns.
import zstd from './main.js'

export const {
  compress,
  compressSync,
  decompress,
  decompressSync,
  compressMany,
  compressManySync,
  decompressMany,
  decompressManySync,
  trainDictionary,
  Dictionary,
  Prefix,
  poolStats,
  configurePool,
  frameInfo,
  MIN_LEVEL,
  MAX_LEVEL,
  DEFAULT_LEVEL,
  ZstdCompress,
  ZstdDecompress,
  createCompressStream,
  createDecompressStream,
  ZstdCompressionStream,
  ZstdDecompressionStream,
} = zstd

export default zstd
