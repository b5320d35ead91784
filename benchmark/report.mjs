// Turns the raw results (benchmark/results/) into benchmark/RESULTS.md and benchmark/chart.svg.
// Run alone to rebuild them from the last run (keeping its date): node benchmark/report.mjs
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { trainingSection } from './dictionary.mjs'
import { FLOOR, FLOOR_AGAIN, FLOOR_BATCH, FLOOR_FRESH, isFloor } from './floor.mjs'
import { httpSection } from './http.mjs'
import { thisMachine } from './machine.mjs'
import { bestInPairs, peerPairsSection } from './overhead.mjs'
import { seekableSection } from './seekable.mjs'
import { spreadSection } from './spread.mjs'

const MODES = {
  cs: ['sync compress', 0],
  ds: ['sync decompress', 0],
  ca: ['async compress, 1 in flight', 1],
  da: ['async decompress, 1 in flight', 1],
  ca16: ['async compress, 16 in flight', 16],
  da16: ['async decompress, 16 in flight', 16],
  ca64: ['async compress, 64 in flight', 64],
  da64: ['async decompress, 64 in flight', 64],
}
const OURS = ['zstd-pool', 'zstd-pool, pooling off']
const REFERENCES = ['node:zlib gzip-6', 'node:zlib brotli-4']
const isPeer = (name) => !OURS.includes(name) && !REFERENCES.includes(name) && !isFloor(name)
const sizeLabel = (size) => (size >= 1 << 20 ? `${size >> 20} MiB` : `${size >> 10} KiB`)
const timeLabel = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`)
const rate = (mbps) => (mbps >= 100 ? mbps.toFixed(0) : mbps.toFixed(1))
const read = (url) => (existsSync(url) ? JSON.parse(readFileSync(url, 'utf8')) : undefined)

const median = (values) => values.sort((a, b) => a - b)[(values.length - 1) >> 1]

/** cells[mode][size][contender] = µs per call: the median over the runs of each run's mean. */
export function collect(files) {
  const samples = {}
  for (const file of files) {
    const vitest = read(file)
    for (const group of vitest?.files.flatMap((entry) => entry.groups) ?? []) {
      const [mode, size] = group.fullName.split(' > ').at(-1).split(' ')
      for (const result of group.benchmarks) {
        // A floor iteration is a batch of calls; an async iteration, a batch of calls in flight.
        const calls = isFloor(result.name) ? FLOOR_BATCH : MODES[mode][1] || 1
        samples[mode] ??= {}
        samples[mode][size] ??= {}
        samples[mode][size][result.name] ??= []
        samples[mode][size][result.name].push((result.mean * 1000) / calls)
      }
    }
  }
  const cells = {}
  for (const [mode, bySize] of Object.entries(samples))
    for (const [size, byName] of Object.entries(bySize))
      for (const [name, values] of Object.entries(byName)) {
        cells[mode] ??= {}
        cells[mode][size] ??= {}
        cells[mode][size][name] = median(values)
      }
  // The floor is the faster of its two measurements (before and after the contenders).
  for (const bySize of Object.values(cells))
    for (const row of Object.values(bySize)) {
      if (row[FLOOR_AGAIN]) row[FLOOR] = Math.min(row[FLOOR] ?? Infinity, row[FLOOR_AGAIN])
      delete row[FLOOR_AGAIN]
    }
  return cells
}

/** The paired measurement of zstd-pool against the floor (benchmark/overhead.mjs) for a cell. */
const pairOf = (pairs, mode, size) => pairs?.find((pair) => pair.mode === mode && pair.size === Number(size))

/** Cells where some binding measured faster than the floor: the run was disturbed there. */
export function disturbed(cells, pairs) {
  const found = []
  for (const pair of pairs ?? [])
    if (pair.ratio < 1) found.push({ mode: pair.mode, size: pair.size, faster: ['zstd-pool, measured in pairs with the floor'] })
  for (const [mode, bySize] of Object.entries(cells))
    for (const [size, row] of Object.entries(bySize)) {
      if (!row[FLOOR]) continue
      const faster = Object.keys(row).filter((name) => !isFloor(name) && !REFERENCES.includes(name) && row[name] < row[FLOOR])
      if (faster.length) found.push({ mode, size: Number(size), faster })
    }
  return found
}

const best = (row, filter) =>
  Object.entries(row)
    .filter(([name]) => filter(name))
    .reduce((a, b) => (!a || b[1] < a[1] ? b : a), undefined)

function table(_mode, bySize) {
  const sizes = Object.keys(bySize)
    .map(Number)
    .sort((a, b) => a - b)
  const names = [...new Set(sizes.flatMap((size) => Object.keys(bySize[size])))].sort(
    (a, b) => order(a) - order(b) || a.localeCompare(b),
  )
  const lines = [`| library | ${sizes.map(sizeLabel).join(' | ')} |`, `|---|${sizes.map(() => '---:').join('|')}|`]
  for (const name of names) {
    const cells = sizes.map((size) => {
      const us = bySize[size][name]
      if (us === undefined) return '–'
      const cell = `${rate(size / us)} (${timeLabel(us)})`
      const top = best(bySize[size], (n) => !REFERENCES.includes(n) && !isFloor(n) && n !== OURS[1])
      return top?.[0] === name ? `**${cell}**` : cell
    })
    lines.push(`| ${isFloor(name) || REFERENCES.includes(name) ? `_${name}_` : name} | ${cells.join(' | ')} |`)
  }
  const ratios = sizes.map((size) => {
    const peer = best(bySize[size], isPeer)
    const ours = bySize[size]['zstd-pool']
    return peer && ours ? `${(peer[1] / ours).toFixed(2)}x vs ${peer[0]}` : '–'
  })
  lines.push(`| **zstd-pool vs best peer** | ${ratios.join(' | ')} |`)
  return lines.join('\n')
}

const order = (name) =>
  name === 'zstd-pool'
    ? 0
    : name === OURS[1]
      ? 1
      : name === FLOOR
        ? 9
        : name === FLOOR_FRESH
          ? 10
          : REFERENCES.includes(name)
            ? 8
            : 2

function targets(cells, pairs, { many, spread, wasm, peerPairs } = {}) {
  const vsBest = (mode, size) => {
    const row = cells[mode]?.[size]
    const peer = row && best(row, isPeer)
    return peer && row['zstd-pool'] ? { ratio: peer[1] / row['zstd-pool'], peer: peer[0] } : undefined
  }
  // Sync calls and calls in flight against the peers are taken from the pairs, where measured
  // (benchmark/overhead.mjs).
  const vsBestPaired = (mode, size) => bestInPairs(peerPairs, mode, size) ?? vsBest(mode, size)
  const between = (mode, size, a, b) => {
    const row = cells[mode]?.[size]
    return row?.[a] && row?.[b] ? { ratio: row[b] / row[a] } : undefined
  }
  // What a binding with no overhead at all would reach: libzstd itself, measured in the same run.
  const rawCeiling = (mode, size) => {
    const row = cells[mode]?.[size]
    const peer = row && best(row, isPeer)
    return peer && row[FLOOR] ? peer[1] / row[FLOOR] : undefined
  }
  const poolingCeiling = (mode) => between(mode, 1024, FLOOR, FLOOR_FRESH)?.ratio
  const checks = []
  // A ratio to the floor below 1 is impossible: the run was disturbed, and it is not printed.
  const check = (what, result, goal, { higherIsBetter = true, ceiling, toFloor = false } = {}) => {
    const bound = ceiling === undefined ? '–' : ceiling < 1 ? 'disturbed' : `${ceiling.toFixed(2)}x`
    if (!result) return checks.push(`| ${what} | not measured | ${goal}x | ${bound} | – |`)
    if (toFloor && result.ratio < 1)
      return checks.push(`| ${what} | disturbed (faster than the floor) | ≤ ${goal}x | – | **run again** |`)
    const met = higherIsBetter ? result.ratio >= goal : result.ratio <= goal
    const shown = `${result.ratio.toFixed(2)}x${result.peer ? ` (vs ${result.peer})` : ''}`
    checks.push(`| ${what} | ${shown} | ${higherIsBetter ? '≥' : '≤'} ${goal}x | ${bound} | ${met ? 'met' : '**not met**'} |`)
  }
  check('sync compress 1 KiB vs best peer', vsBestPaired('cs', 1024), 1.4, { ceiling: rawCeiling('cs', 1024) })
  check('sync decompress 1 KiB vs best peer', vsBestPaired('ds', 1024), 1.4, { ceiling: rawCeiling('ds', 1024) })
  for (const size of [8192, 65536, 1048576]) {
    check(`sync compress ${sizeLabel(size)} vs best peer`, vsBestPaired('cs', size), 1.0, { ceiling: rawCeiling('cs', size) })
    check(`sync decompress ${sizeLabel(size)} vs best peer`, vsBestPaired('ds', size), size === 1048576 ? 1.3 : 1.0, {
      ceiling: rawCeiling('ds', size),
    })
  }
  for (const [mode, size, goal] of [
    ['cs', 1024, 1.15],
    ['ds', 1024, 1.15],
    ['cs', 65536, 1.03],
    ['ds', 65536, 1.03],
    ['cs', 1048576, 1.03],
    ['ds', 1048576, 1.03],
  ]) {
    const pair = pairOf(pairs, mode, size)
    check(`${MODES[mode][0]} ${sizeLabel(size)}: time over raw libzstd`, pair ?? between(mode, size, FLOOR, 'zstd-pool'), goal, {
      higherIsBetter: false,
      toFloor: true,
    })
  }
  for (const mode of ['ca', 'da'])
    for (const size of [1024, 8192]) check(`${MODES[mode][0]} ${sizeLabel(size)} vs best peer`, vsBest(mode, size), 1.5)
  // Issue 14 (many small calls in flight), for compression and decompression alike.
  for (const [mode, size, goal] of [
    ['ca16', 1024, 2.5],
    ['ca64', 1024, 3],
    ['ca64', 65536, 1.3],
    ['da16', 1024, 2.5],
    ['da64', 1024, 3],
    ['da64', 65536, 1.3],
  ])
    check(`${MODES[mode][0]}, ${sizeLabel(size)} vs best peer`, vsBestPaired(mode, size), goal)
  check('pooled vs pooling off, sync compress 1 KiB', between('cs', 1024, 'zstd-pool', OURS[1]), 3, {
    ceiling: poolingCeiling('cs'),
  })
  check('pooled vs pooling off, sync decompress 1 KiB', between('ds', 1024, 'zstd-pool', OURS[1]), 6, {
    ceiling: poolingCeiling('ds'),
  })
  // Issue 28's goals besides the ratios above.
  const row = (what, measured, goal, met) =>
    checks.push(`| ${what} | ${measured} | ${goal} | – | ${met ? 'met' : '**not met**'} |`)
  for (const mode of ['cs', 'ds']) {
    const pair = pairOf(pairs, mode, 1024)
    if (pair?.extra !== undefined)
      row(`${MODES[mode][0]} 1 KiB: µs over raw libzstd`, `${pair.extra.toFixed(2)} µs`, '≤ 0.5 µs', pair.extra <= 0.5)
  }
  for (const { op, ours, array, python } of many?.python?.rows ?? []) {
    const each = array === undefined ? '' : ` (${op}Many: ${(python / array).toFixed(2)}x)`
    row(`${op}ManyPacked, 10,000 × 1 KiB, vs python-zstandard`, `${(python / ours).toFixed(2)}x${each}`, '≥ 1x', ours <= python)
  }
  for (const cell of spread?.cells?.filter((cell) => cell.library === 'zstd-pool' && cell.allocator === 'default') ?? []) {
    const apart = cell.max / cell.min - 1
    // The floor's spread in the same processes is the machine's (benchmark/spread.mjs).
    const floor =
      cell.floorApart === undefined
        ? ''
        : ` (the floor's time: ${(cell.floorApart * 100).toFixed(0)}%; time ÷ the floor's, ${cell.overFloor.toFixed(2)}x: ${(cell.overFloorApart * 100).toFixed(0)}%)`
    row(
      `${MODES[cell.mode][0]} 1 MiB, ${spread.processes} processes: slowest over fastest`,
      `${(apart * 100).toFixed(0)}%${floor}`,
      '≤ 10%',
      apart <= 0.1,
    )
  }
  if (wasm?.rows) {
    const ours = wasm.rows.filter((entry) => entry.name.startsWith('zstd-pool'))
    const ahead = ours.filter((entry) => {
      const boku = wasm.rows.find(
        (other) => other.name === '@bokuweb/zstd-wasm' && other.op === entry.op && other.size === entry.size,
      )
      return boku && entry.micros < boku.micros
    })
    row(
      'WebAssembly under Node: cells ahead of @bokuweb/zstd-wasm',
      `${ahead.length} of ${ours.length}`,
      'all',
      ahead.length === ours.length,
    )
  }
  const slower = []
  for (const [mode, bySize] of Object.entries(cells))
    for (const [size, row] of Object.entries(bySize))
      if (row['node:zlib zstd'] && row['zstd-pool'] && row['zstd-pool'] >= row['node:zlib zstd'])
        slower.push(`${mode} ${sizeLabel(Number(size))}`)
  const zlibCells = Object.values(cells)
    .flatMap((bySize) => Object.values(bySize))
    .filter((row) => row['node:zlib zstd'] && row['zstd-pool'])
  checks.push(
    `| faster than node:zlib zstd in every cell | ${zlibCells.length - slower.length} of ${zlibCells.length} cells | all | – | ${zlibCells.length && !slower.length ? 'met' : `**not met**${slower.length ? `: ${slower.join(', ')}` : ''}`} |`,
  )
  return ['| target | measured | goal | ceiling | |', '|---|---:|---:|---:|---|', ...checks].join('\n')
}

/** The batch section: compressMany / decompressMany against single calls, peers and the floor. */
function manySection(many) {
  const md = [
    '## Batches (`compressMany`, `decompressMany`)',
    '',
    `${many.messages} messages of each size (level 3), on ${many.node}, ${many.cores} cores: µs per message, the median of ${many.rounds} interleaved rounds.`,
    '"All in flight" issues every message as a single async call, then awaits them all, as a server does. The floor is raw libzstd',
    `with a reused context on one core (\`crates/addon/src/exports/floor.rs\`); divided by ${many.cores}, it is what perfect use of every core would give, and the last column is`,
    "that divided by the row's time (1 would be perfect).",
    '',
  ]
  for (const op of ['compress', 'decompress']) {
    for (const size of [...new Set(many.rows.map((row) => row.size))]) {
      const rows = many.rows.filter((row) => row.op === op && row.size === size)
      const floor = rows.find((row) => row.name.startsWith('raw libzstd'))
      const peers = rows.filter((row) => row.name.startsWith('@'))
      const best = peers.reduce((a, b) => (a && a.micros <= b.micros ? a : b), undefined)
      md.push(
        `**${op}, ${size >> 10} KiB**`,
        '',
        '| | µs per message | vs best peer | floor on all cores ÷ this |',
        '|---|---:|---:|---:|',
      )
      for (const row of rows) {
        const ratio = best && row !== best && !row.name.startsWith('raw') ? `${(best.micros / row.micros).toFixed(2)}x` : '–'
        const cores = floor ? `${(floor.micros / many.cores / row.micros).toFixed(2)}` : '–'
        md.push(
          `| ${row.name} | ${row.micros.toFixed(1)} | ${ratio} | ${row.name.startsWith('raw') ? `${(floor.micros / many.cores).toFixed(1)} µs on all cores` : cores} |`,
        )
      }
      md.push('')
    }
  }
  if (many.python) {
    const { python } = many
    md.push(
      `**${python.messages.toLocaleString('en')} messages of 1 KiB, against ${python.version}**`,
      '',
      `\`compressManyPacked\` / \`decompressManyPacked\` (and \`compressMany\` / \`decompressMany\`) against python-zstandard's \`multi_compress_to_buffer\` / \`multi_decompress_to_buffer\` with \`threads=${python.threads}\`,`,
      'the only other batch API in any language, timed inside Python; the rounds interleaved, the median of each. python-zstandard',
      "returns one buffer per thread with every result's offsets, as the packed forms do; `compressMany` / `decompressMany` make a Buffer per message.",
      '',
      '| | packed, µs per message | a Buffer each | python-zstandard | packed vs python-zstandard | a Buffer each vs python-zstandard |',
      '|---|---:|---:|---:|---:|---:|',
      ...python.rows.map(
        (row) =>
          `| ${row.op} | ${row.ours.toFixed(2)} | ${row.array?.toFixed(2) ?? '–'} | ${row.python.toFixed(2)} | ${(row.python / row.ours).toFixed(2)}x | ${row.array ? `${(row.python / row.array).toFixed(2)}x` : '–'} |`,
      ),
      '',
    )
  }
  return md
}

/** The WebAssembly section: our wasm32-wasip1-threads build against the WebAssembly peers, under
 * Node (results/wasm.json) and in Chromium (results/browser.json, from `npm run test:browser`). */
function wasmSection(wasm, browser) {
  const md = [
    '## WebAssembly',
    '',
    'The WebAssembly build (`npm run build:wasi`: wasm32-wasip1-threads, libzstd with SIMD128 and bulk memory, no threads in libzstd) against',
    '@bokuweb/zstd-wasm (libzstd compiled with Emscripten) and fzstd (a decoder in plain JavaScript), level 3, payloads cut from the corpus:',
    `µs per call, the median of ${wasm.rounds} interleaved rounds. Async calls are awaited one at a time. The last column is @bokuweb/zstd-wasm's`,
    'time over ours (above 1: ours is faster).',
  ]
  const table = (rows, where) => {
    md.push('', `**${where}**`, '', '| | size | µs per call | vs @bokuweb/zstd-wasm |', '|---|---|---:|---:|')
    for (const op of ['compress', 'decompress']) {
      for (const size of [...new Set(rows.map((row) => row.size))]) {
        const cell = rows.filter((row) => row.op === op && row.size === size)
        const boku = cell.find((row) => row.name.startsWith('@bokuweb'))
        for (const row of cell) {
          const ratio = boku && row !== boku ? `${(boku.micros / row.micros).toFixed(2)}x` : '–'
          md.push(`| ${op}: ${row.name} | ${size >> 10} KiB | ${row.micros.toFixed(1)} | ${ratio} |`)
        }
      }
    }
  }
  // Measured apart from the rest when a date and machine are given.
  const apart = (results) => (results.date ? `, ${results.date}, ${results.machine}` : '')
  table(wasm.rows, `Node (${wasm.node}${apart(wasm)})`)
  if (browser?.rows) {
    table(
      browser.rows,
      `Chromium (${browser.browser}), in a page (\`examples/browser\`, ${browser.rounds} rounds${apart(browser)})`,
    )
    md.push(
      '',
      'An async call that goes to a thread pays the round trip: the thread is woken for it (or takes it while it lingers), and',
      "wakes the page's thread when done (`Atomics.waitAsync` on a word of the module's memory); results are copied out of the",
      "module's shared memory, which costs more than out of @bokuweb/zstd-wasm's own (see docs/wasm.md).",
    )
  }
  return md
}

/** The memory section: RSS after each burst, pools keeping everything against the defaults. */
function memorySection(memory) {
  const mib = (value) => (value === null || value === undefined ? '–' : `${Math.round(value)} MiB`)
  const md = [
    '## Memory',
    '',
    `Resident set size (RSS) of a process of its own (\`__test__/fixtures/memory.cjs\`) on ${memory.node}, garbage collected before each reading:`,
    'before the burst, right after it, and 1.5 idle timeouts and a second later. "Keep everything" sets `maxIdleBytes` and `idleTimeoutMs` to',
    '`Infinity`, as the pools were before they were bounded by memory; the defaults keep at most 16 MiB of idle contexts per pool',
    'and free them after 5 s without use.',
    '',
    '| burst | pools | before | after the burst | after the idle timeout |',
    '|---|---|---:|---:|---:|',
  ]
  for (const row of memory.rows)
    md.push(`| ${row.burst} | ${row.pools} | ${mib(row.before)} | ${mib(row.afterBurst)} | ${mib(row.afterTimeout)} |`)
  md.push('', 'A steady loop of 1 KiB calls (sync and async, one at a time, 3 s):', '')
  md.push('| pools | calls | contexts created | RSS at the start | RSS at the end |', '|---|---:|---:|---:|---:|')
  for (const row of memory.steady)
    md.push(`| ${row.pools} | ${row.calls} | ${row.created} | ${mib(row.rssStart)} | ${mib(row.rssEnd)} |`)
  return md
}

/** The streams section: every chunk size, and the goals of issue 12 at 16 KiB and up. */
function streamSection(streams) {
  const lines = [
    '## Streams',
    '',
    `${streams.size >> 20} MiB of the corpus, level 3, fed in chunks of each size, on ${streams.node}: MB/s of uncompressed data, the median`,
    `of ${streams.rounds} interleaved rounds. Decompression takes a standard level-3 frame, cut into the same chunks. One-shot: zstd-pool's`,
    `\`compress\` / \`decompress\` of the whole ${streams.size >> 20} MiB in one call: ${rate(streams.oneShot.compress)} and ${rate(streams.oneShot.decompress)} MB/s.`,
    '',
  ]
  const chunks = [...new Set(streams.rows.map((row) => row.chunk))].sort((a, b) => a - b)
  const names = [...new Set(streams.rows.map((row) => row.name))]
  const cell = (name, chunk) => streams.rows.find((row) => row.name === name && row.chunk === chunk)
  lines.push(
    `| | ${chunks.map((chunk) => `${sizeLabel(chunk)} chunks`).join(' | ')} |`,
    `|---|${chunks.map(() => '---:').join('|')}|`,
  )
  for (const op of ['compress', 'decompress'])
    for (const name of names)
      lines.push(
        `| ${name}, ${op} | ${chunks.map((chunk) => (cell(name, chunk) ? rate(cell(name, chunk)[op]) : '–')).join(' | ')} |`,
      )
  const zlibName = names.find((name) => name.startsWith('node:zlib'))
  const goals = [
    ['compress', 'one-shot', 0.9],
    ['decompress', 'one-shot', 1],
    ['compress', 'node:zlib', 1.3],
    ['decompress', 'node:zlib', 3],
  ]
  lines.push(
    '',
    'Goals (issue 12), at 16 KiB chunks and up:',
    '',
    '| stream | goal | measured (16 KiB, 64 KiB, 1 MiB) | |',
    '|---|---|---|---|',
  )
  for (const name of names.filter((name) => name.startsWith('zstd-pool')))
    for (const [op, against, goal] of goals) {
      const ratios = chunks
        .filter((chunk) => chunk >= 16 << 10)
        .map((chunk) => {
          const ours = cell(name, chunk)?.[op]
          const other = against === 'one-shot' ? streams.oneShot[op] : cell(zlibName, chunk)?.[op]
          return ours && other ? ours / other : undefined
        })
      if (ratios.includes(undefined)) continue
      const met = ratios.every((ratio) => ratio >= goal)
      lines.push(
        `| ${name}, ${op} | ≥ ${goal}x ${against} | ${ratios.map((ratio) => `${ratio.toFixed(2)}x`).join(', ')} | ${met ? 'met' : '**not met**'} |`,
      )
    }
  return lines
}

/** One line per cell: zstd-pool against the fastest other zstd library and against the floor. */
export function summary(cells, pairs) {
  const lines = []
  for (const [mode, bySize] of Object.entries(cells))
    for (const [size, row] of Object.entries(bySize)) {
      const ours = row['zstd-pool']
      if (!ours) continue
      const peer = best(row, isPeer)
      const vsPeer = peer ? `${(peer[1] / ours).toFixed(2)}x the speed of ${peer[0]} (${timeLabel(peer[1])})` : 'no other library'
      const pair = pairOf(pairs, mode, size)
      const share = pair ? 1 / pair.ratio : row[FLOOR] && row[FLOOR] / ours
      const vsFloor = share ? `; ${Math.round(100 * share)}% of raw libzstd's speed${pair ? ' (paired)' : ''}` : ''
      lines.push(`${MODES[mode][0]}, ${sizeLabel(Number(size))}: ${timeLabel(ours)}, ${vsPeer}${vsFloor}`)
    }
  return lines
}

const xml = (text) => String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;')

/**
 * The chart a chooser reads: per mode and size, zstd-pool's speed relative to the best other
 * zstd library (left), and in the sync modes relative to the floor (right). The absolute figures
 * are in the tables of RESULTS.md.
 */
export function chart(cells, pairs) {
  const modes = Object.keys(MODES).filter((mode) => cells[mode])
  const rowHeight = 20
  const [labelWidth, panelWidth, gap] = [200, 330, 40]
  const left = [labelWidth, labelWidth + panelWidth + gap]
  const rows = []
  for (const mode of modes) {
    rows.push({ heading: MODES[mode][0] })
    const sizes = Object.keys(cells[mode])
      .map(Number)
      .sort((a, b) => a - b)
    for (const size of sizes) {
      const row = cells[mode][size]
      const ours = row['zstd-pool']
      const peer = best(row, isPeer)
      const pair = pairOf(pairs, mode, size)
      rows.push({
        label: sizeLabel(size),
        peer: ours && peer ? { ratio: peer[1] / ours, name: peer[0] } : undefined,
        floor: pair ? 1 / pair.ratio : ours && row[FLOOR] ? row[FLOOR] / ours : undefined,
      })
    }
  }
  const top = 92
  const height = top + rows.length * rowHeight + 50
  const width = left[1] + panelWidth + 30
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    '<rect width="100%" height="100%" fill="white"/>',
    '<text x="10" y="22" font-size="15" font-weight="bold">zstd-pool, level 3: speed relative to the alternatives</text>',
    `<text x="${left[0]}" y="50" font-weight="bold">vs the fastest other zstd library (log scale)</text>`,
    `<text x="${left[0]}" y="66" fill="#555">right of 1x (green): zstd-pool is faster; 2x: half the time</text>`,
    `<text x="${left[1]}" y="50" font-weight="bold">share of raw libzstd's speed (sync calls)</text>`,
    `<text x="${left[1]}" y="66" fill="#555">the floor: libzstd with no Node work, same run</text>`,
  ]
  // Left panel: a log scale around 1x, one doubling per 64 px, from 0.4x to about 12x.
  const one = left[0] + 85
  const xPeer = (ratio) => one + 64 * Math.max(-1.3, Math.min(3.6, Math.log2(ratio)))
  const xFloor = (share) => left[1] + (panelWidth - 100) * Math.min(share, 1)
  const bottom = top + rows.length * rowHeight
  const axis = (x, label, strong) => {
    svg.push(
      `<line x1="${x}" x2="${x}" y1="${top - 8}" y2="${bottom}" stroke="${strong ? '#444' : '#bbb'}"${strong ? '' : ' stroke-dasharray="3 3"'}/>`,
    )
    svg.push(`<text x="${x}" y="${bottom + 14}" text-anchor="middle" fill="#555">${label}</text>`)
  }
  for (const ratio of [0.5, 2, 4, 8]) axis(xPeer(ratio), `${ratio}x`, false)
  axis(one, '1x', true)
  axis(xFloor(0.5), '50%', false)
  axis(xFloor(1), '100%', true)
  rows.forEach((row, index) => {
    const y = top + index * rowHeight
    if (row.heading) {
      svg.push(`<text x="10" y="${y + 14}" font-weight="bold">${xml(row.heading)}</text>`)
      return
    }
    svg.push(`<text x="${labelWidth - 10}" y="${y + 14}" text-anchor="end">${row.label}</text>`)
    if (row.peer) {
      const end = xPeer(row.peer.ratio)
      const faster = row.peer.ratio >= 1
      const [x, w] = faster ? [one, end - one] : [end, one - end]
      svg.push(
        `<rect x="${x.toFixed(1)}" y="${y + 3}" width="${w.toFixed(1)}" height="${rowHeight - 6}" fill="${faster ? '#2ca02c' : '#d62728'}"/>`,
      )
      svg.push(
        `<text x="${(Math.max(end, one) + 4).toFixed(1)}" y="${y + 14}">${row.peer.ratio.toFixed(2)}x <tspan fill="#777">${xml(row.peer.name)}</tspan></text>`,
      )
    } else {
      svg.push(`<text x="${left[0]}" y="${y + 14}" fill="#999">no other zstd library here</text>`)
    }
    if (row.floor !== undefined) {
      const disturbedCell = row.floor > 1
      const share = disturbedCell ? 1 : row.floor
      svg.push(
        `<rect x="${left[1]}" y="${y + 3}" width="${(xFloor(share) - left[1]).toFixed(1)}" height="${rowHeight - 6}" fill="${disturbedCell ? '#bbb' : '#1f77b4'}"/>`,
      )
      const text = disturbedCell ? 'disturbed: faster than the floor' : `${Math.round(row.floor * 100)}%`
      svg.push(`<text x="${xFloor(share) + 4}" y="${y + 14}">${text}</text>`)
    }
  })
  svg.push('</svg>')
  return svg.join('\n')
}

/** The date and length (in seconds) of the run the report in place was made from. A report
 * rebuilt from the results alone (node benchmark/report.mjs, after one section was measured again)
 * keeps them: the suite's cells are still that run's. Sections measured apart give their own dates. */
function lastRun() {
  const url = new URL('./RESULTS.md', import.meta.url)
  const text = existsSync(url) ? readFileSync(url, 'utf8') : ''
  const minutes = text.match(/^The whole run took (\d+) minutes\.$/m)?.[1]
  return {
    date: text.match(/^Generated by `npm run bench` on (\d{4}-\d{2}-\d{2})\./m)?.[1],
    machine: text.match(/^Generated by .*? Machine: ([^;]+);/m)?.[1],
    seconds: minutes === undefined ? undefined : Number(minutes) * 60,
  }
}

export function writeReport({
  major = '26',
  runs = 3,
  seconds,
  date = new Date().toISOString().slice(0, 10),
  machine = thisMachine(),
} = {}) {
  const files = Array.from({ length: runs }, (_, run) => new URL(`./results/node${major}-run${run + 1}.json`, import.meta.url))
  const cells = collect(files)
  const overhead = read(new URL('./results/overhead.json', import.meta.url))
  const pairs = overhead?.rows
  const troubled = disturbed(cells, pairs)
  const context = read(new URL(`./results/context-${major}.json`, import.meta.url))
  const sizes = Object.keys(context.ratios['zstd-pool'] ?? {}).map(Number)
  const md = [
    '# zstd-pool benchmark results',
    '',
    `Generated by \`npm run bench\` on ${date}. Machine: ${machine}; ` +
      `${context.node}; libuv threadpool ${process.env.UV_THREADPOOL_SIZE ?? 4}${process.env.UV_THREADPOOL_SIZE ? '' : ' (default)'}.`,
    'Level 3 for zstd (gzip level 6 and brotli quality 4, in italics, are there for context). Payloads: 15 per size cut from the',
    'corpus in `__test__/corpus/` (text, HTML, URLs, a PDF, a JPEG, protobuf), cycled. Decompression inputs are standard level-3 frames',
    'that record their content size. Each cell: MB/s of uncompressed data (1 MB = 10^6 bytes), then the time per call; with N in',
    "flight, a call's time is the time of a batch of N divided by N. vitest bench (tinybench): the mean over ≥ 500 ms per cell,",
    `all contenders in one process, one after the other; each cell is the median of ${runs} complete run${runs > 1 ? 's' : ''}. Bold: the fastest`,
    'zstd binding in the column. A shared 2-core VM drifts: cells within about 10% of each other are a tie.',
    `The floor, _${FLOOR}_, is libzstd called from native code with no Node work per call (\`crates/addon/src/exports/floor.rs\`), measured`,
    'in the same process and the same cells as the contenders, so every ratio to it is taken under the same conditions.',
    ...(seconds ? [`The whole run took ${Math.round(seconds / 60)} minutes.`] : []),
    '',
  ]
  if (troubled.length)
    md.push(
      `**This run was disturbed.** In ${troubled.length} cell${troubled.length > 1 ? 's' : ''} a binding measured faster than raw libzstd with a`,
      'reused context, which no binding can be: the machine was busier while the floor was measured. Ratios to the floor are not',
      'printed for those cells; run again on a quiet machine before trusting them. The cells:',
      '',
      ...troubled.map(({ mode, size, faster }) => `- ${MODES[mode][0]}, ${sizeLabel(size)}: ${faster.join(', ')}`),
      '',
    )
  md.push(
    '![zstd-pool relative to the fastest other library and to raw libzstd](chart.svg)',
    '',
    '## Targets',
    '',
    'The goals of issue 3, of issue 14 for calls in flight (set from measurements on other 2-core VMs, where the peers were slower relative to libzstd), and of issue 28. The',
    "ceiling is what a binding with no overhead at all would reach here: the best peer's time over the floor's, or for pooling,",
    `the floor with a fresh context per call over the floor with a reused one (_${FLOOR_FRESH}_). For a target not met,`,
    '[docs/performance.md](../docs/performance.md#the-targets-not-met-and-where-the-rest-of-the-time-is) says where the rest of the time is, measured.',
    '',
    targets(cells, pairs, {
      many: read(new URL('./results/many.json', import.meta.url)),
      spread: read(new URL('./results/spread.json', import.meta.url)),
      wasm: read(new URL('./results/wasm.json', import.meta.url)),
      peerPairs: overhead?.peers,
    }),
    '',
  )
  if (pairs) {
    md.push(
      '## Sync calls against the floor, in pairs',
      '',
      '`benchmark/overhead.mjs`: a batch of 15 floor calls and a batch of 15 `compressSync` or `decompressSync` calls on the',
      'same payloads, back to back, in alternating order, for 1.5 s per cell; the ratio is the median of the rounds. Drift that',
      'shifts cells measured one after the other shifts both halves of a pair alike, so these are the ratios the targets use.',
      '',
      '| call | size | zstd-pool | floor | time over the floor | rounds |',
      '|---|---|---:|---:|---:|---:|',
      ...pairs.map(
        (pair) =>
          `| ${MODES[pair.mode][0]} | ${sizeLabel(pair.size)} | ${timeLabel(pair.ours)} | ${timeLabel(pair.floor)} | ${pair.ratio < 1 ? 'disturbed' : `${pair.ratio.toFixed(2)}x`} | ${pair.rounds} |`,
      ),
      '',
      ...peerPairsSection(overhead.peers, { mode: (mode) => MODES[mode][0], size: sizeLabel, time: timeLabel }),
    )
  }
  for (const [mode, [label]] of Object.entries(MODES)) {
    if (!cells[mode]) continue
    md.push(`## ${label} (${mode})`, '', table(mode, cells[mode]), '')
  }
  md.push('## Compression ratio (input bytes / output bytes, 15 payloads per size)', '')
  md.push(`| library | ${sizes.map(sizeLabel).join(' | ')} |`, `|---|${sizes.map(() => '---:').join('|')}|`)
  for (const [name, bySize] of Object.entries(context.ratios))
    md.push(`| ${name} | ${sizes.map((size) => bySize[size].toFixed(3)).join(' | ')} |`)
  md.push('', '## Not measured', '')
  md.push(
    '- `@mongodb-js/zstd` 2.x and 7.x (C++; 7.0.0 is what `mongodb@7` uses): their install fetches prebuilt binaries from GitHub and otherwise runs a script missing from the npm tarball, so they do not install from the npm registry alone; 1.2.2 (napi-rs, which ignores the level argument and always uses 3) is measured instead.',
  )
  md.push(
    '- `zstd-napi` keeps its prebuilt binaries on GitHub too; the setup compiles it from source with node-gyp against the local Node headers.',
  )
  md.push(
    '- Others surveyed but left out: `cppzst` (NAN, not ABI-stable: does not load on Node 26), `zstd-codec` and `zstddec` (return wrong output on common inputs), `simple-zstd` (spawns the `zstd` tool per call).',
  )
  for (const { name, reason } of context.skipped) md.push(`- ${name}: ${reason}`)
  const multithread = read(new URL('./results/multithread.json', import.meta.url))
  if (multithread) {
    md.push('', '## Multi-threaded compression (`workers`)', '')
    md.push(
      `One ${multithread.size >> 20} MiB input built from the corpus, \`compressSync\` on ${multithread.node}, ${multithread.cores} cores; median of 5 calls. ` +
        '"Cached" is the default (the context and its worker threads are kept between calls); "fresh" sets `maxIdleMultithreadedContexts: 0`, so each call starts its threads anew. ' +
        `Workers are capped at the cores${multithread.cores < 4 ? `, so 4 workers run as ${Math.max(2, multithread.cores)} here` : ''}; libzstd writes the same bytes with any number of workers.`,
      '',
    )
    md.push(
      '| level | workers | cached | fresh | speed-up from caching | speed-up from threads (cached vs 0 workers) |',
      '|---:|---:|---:|---:|---:|---:|',
    )
    for (const row of multithread.rows) {
      const single = multithread.rows.find((other) => other.level === row.level && other.workers === 0).cached
      md.push(
        `| ${row.level} | ${row.workers} | ${row.cached.toFixed(1)} ms | ${row.workers ? `${row.fresh.toFixed(1)} ms` : '–'} | ${row.workers ? `${(row.fresh / row.cached).toFixed(2)}x` : '–'} | ${row.workers ? `${(single / row.cached).toFixed(2)}x` : '–'} |`,
      )
    }
    md.push(
      '',
      'Memory a cached context holds (RSS after a call minus before it, in a process of its own; and what freeing it returned):',
      '',
    )
    for (const row of multithread.memory)
      md.push(
        `- level ${row.level}, ${row.workers} workers: ${(row.held / 1e6).toFixed(1)} MB held, ${(row.freed / 1e6).toFixed(1)} MB returned when freed`,
      )
  }
  const dictionary = read(new URL('./results/dictionary.json', import.meta.url))
  if (dictionary) {
    md.push('', '## Dictionaries', '')
    md.push(
      `${dictionary.records} JSON records of ${Math.round(dictionary.average)} bytes on average, level 3, sync calls on ${dictionary.node}${dictionary.date ? ` (${dictionary.date}, a run of its own)` : ''}; ` +
        `a ${dictionary.dictionarySize}-byte dictionary trained on 5000 other records by \`trainDictionarySync\` (${dictionary.trainMs.toFixed(0)} ms).`,
      '',
      '| | ratio | compress | decompress |',
      '|---|---:|---:|---:|',
    )
    for (const row of dictionary.rows)
      md.push(`| ${row.name} | ${row.ratio.toFixed(2)} | ${timeLabel(row.compress)} | ${timeLabel(row.decompress)} |`)
    md.push(
      '',
      `Building a \`Dictionary\` (digesting it for decompression and for level 3) takes ${timeLabel(dictionary.build)}; a call that builds its own ` +
        `takes ${timeLabel(dictionary.buildAndUse)} instead of ${timeLabel(dictionary.rows[1].compress)}: build it once and reuse it.`,
    )
    if (dictionary.training) md.push('', ...trainingSection(dictionary.training))
  }
  const streams = read(new URL('./results/stream.json', import.meta.url))
  if (streams?.oneShot) md.push('', ...streamSection(streams))
  const many = read(new URL('./results/many.json', import.meta.url))
  if (many?.rows) md.push('', ...manySection(many))
  const wasm = read(new URL('./results/wasm.json', import.meta.url))
  if (wasm?.rows) md.push('', ...wasmSection(wasm, read(new URL('./results/browser.json', import.meta.url))))
  const httpResult = read(new URL('./results/http.json', import.meta.url))
  if (httpResult?.rows) md.push('', ...httpSection(httpResult))
  const seekable = read(new URL('./results/seekable.json', import.meta.url))
  if (seekable?.cells) md.push('', ...seekableSection(seekable))
  const spread = read(new URL('./results/spread.json', import.meta.url))
  if (spread?.cells) md.push('', ...spreadSection(spread))
  const memory = read(new URL('./results/memory.json', import.meta.url))
  if (memory?.rows) md.push('', ...memorySection(memory))
  writeFileSync(new URL('./RESULTS.md', import.meta.url), `${md.join('\n')}\n`)
  writeFileSync(new URL('./chart.svg', import.meta.url), `${chart(cells, pairs)}\n`)
  console.log('Wrote benchmark/RESULTS.md and benchmark/chart.svg')
}

if (import.meta.url === `file://${process.argv[1]}`)
  writeReport({ major: process.argv[2] ?? '26', runs: Number(process.argv[3] ?? 3), ...lastRun() })
