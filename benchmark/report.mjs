// Turns the raw results (benchmark/results/) into benchmark/RESULTS.md and benchmark/chart.svg.
// Run alone to rebuild them from the last run: node benchmark/report.mjs
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus, totalmem } from 'node:os'

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
const RAW = 'raw libzstd from Rust (reused context)'
const isPeer = (name) => !OURS.includes(name) && !REFERENCES.includes(name) && name !== RAW
const sizeLabel = (size) => (size >= 1 << 20 ? `${size >> 20} MiB` : `${size >> 10} KiB`)
const timeLabel = (us) => (us >= 1000 ? `${(us / 1000).toFixed(2)} ms` : `${us.toFixed(1)} µs`)
const rate = (mbps) => (mbps >= 100 ? mbps.toFixed(0) : mbps.toFixed(1))
const read = (url) => (existsSync(url) ? JSON.parse(readFileSync(url, 'utf8')) : undefined)

const median = (values) => values.sort((a, b) => a - b)[(values.length - 1) >> 1]

/** cells[mode][size][contender] = µs per call: the median over the runs of each run's mean. */
function collect(major, runs) {
  const samples = {}
  for (let run = 1; run <= runs; run++) {
    const vitest = read(new URL(`./results/node${major}-run${run}.json`, import.meta.url))
    for (const group of vitest?.files.flatMap((file) => file.groups) ?? []) {
      const [mode, size] = group.fullName.split(' > ').at(-1).split(' ')
      const inFlight = MODES[mode][1] || 1
      for (const result of group.benchmarks) {
        samples[mode] ??= {}
        samples[mode][size] ??= {}
        samples[mode][size][result.name] ??= []
        samples[mode][size][result.name].push((result.mean * 1000) / inFlight)
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
  // Raw libzstd from Rust (cargo bench), for the sync rows: the floor a binding can reach.
  const rust = read(new URL('./results/rust.json', import.meta.url))
  for (const row of rust?.rows ?? []) {
    const mode = { compress: 'cs', decompress: 'ds' }[row.op]
    if (row.variant === 'reused context' && cells[mode]?.[row.size]) cells[mode][row.size][RAW] = row.micros
  }
  return { cells, rust }
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
      const top = best(bySize[size], (n) => !REFERENCES.includes(n) && n !== RAW && n !== OURS[1])
      return top?.[0] === name ? `**${cell}**` : cell
    })
    lines.push(`| ${name === RAW || REFERENCES.includes(name) ? `_${name}_` : name} | ${cells.join(' | ')} |`)
  }
  const ratios = sizes.map((size) => {
    const peer = best(bySize[size], isPeer)
    const ours = bySize[size]['zstd-pool']
    return peer && ours ? `${(peer[1] / ours).toFixed(2)}x vs ${peer[0]}` : '–'
  })
  lines.push(`| **zstd-pool vs best peer** | ${ratios.join(' | ')} |`)
  return lines.join('\n')
}

const order = (name) => (name === 'zstd-pool' ? 0 : name === OURS[1] ? 1 : name === RAW ? 9 : REFERENCES.includes(name) ? 8 : 2)

function targets(cells, rust) {
  const vsBest = (mode, size) => {
    const row = cells[mode]?.[size]
    const peer = row && best(row, isPeer)
    return peer && row['zstd-pool'] ? { ratio: peer[1] / row['zstd-pool'], peer: peer[0] } : undefined
  }
  const between = (mode, size, a, b) => {
    const row = cells[mode]?.[size]
    return row?.[a] && row?.[b] ? { ratio: row[b] / row[a] } : undefined
  }
  // What a binding with no overhead at all would reach: libzstd itself, called from Rust.
  const rawCeiling = (mode, size) => {
    const row = cells[mode]?.[size]
    const peer = row && best(row, isPeer)
    return peer && row[RAW] ? peer[1] / row[RAW] : undefined
  }
  const rustRow = (op, size, variant) =>
    rust?.rows.find((row) => row.op === op && row.size === size && row.variant === variant)?.micros
  const poolingCeiling = (op) => rustRow(op, 1024, 'fresh context per call') / rustRow(op, 1024, 'reused context') || undefined
  const checks = []
  const check = (what, result, goal, { higherIsBetter = true, ceiling } = {}) => {
    const bound = ceiling ? `${ceiling.toFixed(2)}x` : '–'
    if (!result) return checks.push(`| ${what} | not measured | ${goal}x | ${bound} | – |`)
    const met = higherIsBetter ? result.ratio >= goal : result.ratio <= goal
    const shown = `${result.ratio.toFixed(2)}x${result.peer ? ` (vs ${result.peer})` : ''}`
    checks.push(`| ${what} | ${shown} | ${higherIsBetter ? '≥' : '≤'} ${goal}x | ${bound} | ${met ? 'met' : '**not met**'} |`)
  }
  check('sync compress 1 KiB vs best peer', vsBest('cs', 1024), 1.4, { ceiling: rawCeiling('cs', 1024) })
  check('sync decompress 1 KiB vs best peer', vsBest('ds', 1024), 1.4, { ceiling: rawCeiling('ds', 1024) })
  for (const size of [8192, 65536, 1048576]) {
    check(`sync compress ${sizeLabel(size)} vs best peer`, vsBest('cs', size), 1.0, { ceiling: rawCeiling('cs', size) })
    check(`sync decompress ${sizeLabel(size)} vs best peer`, vsBest('ds', size), size === 1048576 ? 1.3 : 1.0, {
      ceiling: rawCeiling('ds', size),
    })
  }
  for (const [mode, size, goal] of [
    ['cs', 1024, 1.15],
    ['ds', 1024, 1.15],
    ['cs', 1048576, 1.03],
    ['ds', 1048576, 1.03],
  ]) {
    check(`${MODES[mode][0]} ${sizeLabel(size)}: time over raw libzstd`, between(mode, size, RAW, 'zstd-pool'), goal, {
      higherIsBetter: false,
    })
  }
  for (const mode of ['ca', 'da'])
    for (const size of [1024, 8192]) check(`${MODES[mode][0]} ${sizeLabel(size)} vs best peer`, vsBest(mode, size), 1.5)
  check('async compress, 64 in flight, 1 KiB vs best peer', vsBest('ca64', 1024), 2)
  check('async compress, 64 in flight, 64 KiB vs best peer', vsBest('ca64', 65536), 1.2)
  check('pooled vs pooling off, sync compress 1 KiB', between('cs', 1024, 'zstd-pool', OURS[1]), 3, {
    ceiling: poolingCeiling('compress'),
  })
  check('pooled vs pooling off, sync decompress 1 KiB', between('ds', 1024, 'zstd-pool', OURS[1]), 6, {
    ceiling: poolingCeiling('decompress'),
  })
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

function chart(cells) {
  const modes = Object.keys(MODES).filter((mode) => cells[mode])
  const names = [...new Set(modes.flatMap((mode) => Object.values(cells[mode]).flatMap(Object.keys)))].sort(
    (a, b) => order(a) - order(b) || a.localeCompare(b),
  )
  const palette = [
    '#d62728',
    '#ff9896',
    '#1f77b4',
    '#2ca02c',
    '#9467bd',
    '#8c564b',
    '#e377c2',
    '#17becf',
    '#bcbd22',
    '#7f7f7f',
    '#aaaaaa',
    '#000000',
  ]
  const color = Object.fromEntries(names.map((name, i) => [name, palette[i % palette.length]]))
  const [w, h, pad] = [380, 230, 44]
  const columns = 2
  const rows = Math.ceil(modes.length / columns)
  const legendHeight = 22 * Math.ceil(names.length / 3) + 10
  const svg = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${columns * w + 20}" height="${rows * h + legendHeight + 40}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="14" font-weight="bold">Throughput by payload size (MB/s of uncompressed data, log scale; higher is better)</text>`,
  ]
  const lo = 0.3
  const hi = 5000
  const y = (mbps, top) =>
    top + 20 + (h - pad - 20) * (1 - (Math.log10(Math.max(mbps, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)))
  modes.forEach((mode, index) => {
    const left = 10 + (index % columns) * w
    const top = 30 + Math.floor(index / columns) * h
    const sizes = Object.keys(cells[mode])
      .map(Number)
      .sort((a, b) => a - b)
    const x = (i) => left + pad + ((w - pad - 20) * i) / Math.max(1, sizes.length - 1)
    svg.push(`<text x="${left + pad}" y="${top + 14}" font-weight="bold">${MODES[mode][0]}</text>`)
    for (const tick of [1, 10, 100, 1000]) {
      svg.push(`<line x1="${left + pad}" x2="${left + w - 20}" y1="${y(tick, top)}" y2="${y(tick, top)}" stroke="#eee"/>`)
      svg.push(`<text x="${left + pad - 4}" y="${y(tick, top) + 4}" text-anchor="end">${tick}</text>`)
    }
    sizes.forEach((size, i) => {
      svg.push(`<text x="${x(i)}" y="${top + h - pad + 16}" text-anchor="middle">${sizeLabel(size)}</text>`)
    })
    for (const name of names) {
      const points = sizes.map((size, i) => [i, cells[mode][size][name]]).filter(([, us]) => us)
      if (!points.length) continue
      const path = points.map(([i, us]) => `${x(i).toFixed(1)},${y(sizes[i] / us, top).toFixed(1)}`).join(' ')
      const dash = name === RAW || REFERENCES.includes(name) ? ' stroke-dasharray="4 3"' : ''
      const width = name === 'zstd-pool' ? 3 : 1.5
      svg.push(`<polyline points="${path}" fill="none" stroke="${color[name]}" stroke-width="${width}"${dash}/>`)
    }
  })
  names.forEach((name, i) => {
    const lx = 10 + (i % 3) * 260
    const ly = 30 + rows * h + 10 + Math.floor(i / 3) * 22
    svg.push(`<line x1="${lx}" x2="${lx + 24}" y1="${ly}" y2="${ly}" stroke="${color[name]}" stroke-width="3"/>`)
    svg.push(`<text x="${lx + 30}" y="${ly + 4}">${name.replace(/&/g, '&amp;')}</text>`)
  })
  svg.push('</svg>')
  return svg.join('\n')
}

export function writeReport({ major = '26', runs = 3 } = {}) {
  const { cells, rust } = collect(major, runs)
  const context = read(new URL(`./results/context-${major}.json`, import.meta.url))
  const sizes = Object.keys(context.ratios['zstd-pool'] ?? {}).map(Number)
  const cpu = cpus()
  const md = [
    '# zstd-pool benchmark results',
    '',
    `Generated by \`npm run bench\` on ${new Date().toISOString().slice(0, 10)}. Machine: ${cpu[0].model}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB; ` +
      `${context.node}; libuv threadpool ${process.env.UV_THREADPOOL_SIZE ?? 4}${process.env.UV_THREADPOOL_SIZE ? '' : ' (default)'}.`,
    'Level 3 for zstd (gzip level 6 and brotli quality 4, in italics, are there for context). Payloads: 15 per size cut from the',
    'corpus in `__test__/corpus/` (text, HTML, URLs, a PDF, a JPEG, protobuf), cycled. Decompression inputs are standard level-3 frames',
    'that record their content size. Each cell: MB/s of uncompressed data (1 MB = 10^6 bytes), then the time per call; with N in',
    "flight, a call's time is the time of a batch of N divided by N. vitest bench (tinybench): the mean over ≥ 500 ms per cell,",
    `all contenders in one process, one after the other; each cell is the median of ${runs} complete run${runs > 1 ? 's' : ''}. Bold: the fastest`,
    'zstd binding in the column. A shared 2-core VM drifts: cells within about 10% of each other are a tie.',
    '',
    '![throughput by payload size](chart.svg)',
    '',
    '## Targets',
    '',
    'The goals of issue 3 (set from measurements on another 2-core VM, where the peers were slower relative to libzstd). The',
    "ceiling is what a binding with no overhead at all would reach here: the best peer's time over raw libzstd's (called from",
    'Rust with a reused context), or for pooling, raw libzstd with a fresh context per call over a reused one (`cargo bench`).',
    '',
    targets(cells, rust),
    '',
  ]
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
      `${dictionary.records} JSON records of ${Math.round(dictionary.average)} bytes on average, level 3, sync calls on ${dictionary.node}; ` +
        `a ${dictionary.dictionarySize}-byte dictionary trained on 5000 other records by \`trainDictionary\` (${dictionary.trainMs.toFixed(0)} ms).`,
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
  }
  const streams = read(new URL('./results/stream.json', import.meta.url))
  if (streams) {
    md.push('', '## Streams', '')
    md.push(
      `${streams.size >> 20} MiB of the corpus in ${streams.chunk >> 10} KiB chunks through Node Transform streams, level 3, on ${streams.node}; the best of 3 runs.`,
      '',
      '| library | compress | decompress | ratio |',
      '|---|---:|---:|---:|',
    )
    for (const row of streams.rows)
      md.push(`| ${row.name} | ${rate(row.compress)} MB/s | ${rate(row.decompress)} MB/s | ${row.ratio.toFixed(3)} |`)
  }
  if (rust) {
    md.push('', '## The pool itself, from Rust (`cargo bench --bench pool`)', '')
    md.push(
      'Per call, same payloads, no Node involved: libzstd with one reused context, through a context pool (take, use, reset, give back), and with a fresh context per call.',
      '',
    )
    md.push('| operation | size | variant | time per call |', '|---|---|---|---:|')
    for (const row of rust.rows) md.push(`| ${row.op} | ${sizeLabel(row.size)} | ${row.variant} | ${timeLabel(row.micros)} |`)
  }
  writeFileSync(new URL('./RESULTS.md', import.meta.url), `${md.join('\n')}\n`)
  writeFileSync(new URL('./chart.svg', import.meta.url), `${chart(cells)}\n`)
  console.log('Wrote benchmark/RESULTS.md and benchmark/chart.svg')
}

if (import.meta.url === `file://${process.argv[1]}`)
  writeReport({ major: process.argv[2] ?? '26', runs: Number(process.argv[3] ?? 3) })
