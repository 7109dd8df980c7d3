/**
 * Hardening tests record what they tried (attack class, attempts, how many the server survived) on
 * their task; scripts/reliability-reporter.mjs turns the records of passing tests into
 * docs/reliability.md, so the published numbers are always the suite's own.
 */
export interface ReliabilityRecord {
  attack: string;
  tried: number;
  survived: number;
}

declare module 'vitest' {
  interface TaskMeta {
    reliability?: ReliabilityRecord[];
  }
}

export function recordReliability(
  task: { meta: { reliability?: ReliabilityRecord[] } },
  attack: string,
  tried: number,
  survived: number,
): void {
  task.meta.reliability = [...(task.meta.reliability ?? []), { attack, tried, survived }];
}
