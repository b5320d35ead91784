// The ES module entry: the API of main.js as named exports (and as the default export).
import { createRequire } from 'node:module'

const zstd = createRequire(import.meta.url)('./main.js')

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
