// Defaults of settings that both the code reading them (src/config.ts) and their table
// (config/environment.ts) name.
/**
 * Server-run checks at once: the machine running `npm test` for agents usually has few cores, so two
 * at a time, one per principal, and a line of 32 behind them.
 */
export const DEFAULT_CHECK_SLOTS = { maxConcurrent: 2, maxPerPrincipal: 1, maxQueued: 32 } as const;

export const DEFAULT_SESSIONS_PER_PRINCIPAL = 32;
export const DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
export const DEFAULT_AUTH_FAILURE_LIMIT = 30;
