// The machine a measurement ran on, as the report names it (sections measured apart from the
// suite's run record it with their date).
import { cpus, totalmem } from 'node:os'

/** This machine: its CPU, cores and memory. */
export function thisMachine() {
  const cpu = cpus()
  return `${cpu[0].model}, ${cpu.length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB`
}
