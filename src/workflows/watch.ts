import { existsSync, type FSWatcher, watch } from 'node:fs';

export const DEBOUNCE_MS = 50;
export const MISSING_DIR_POLL_MS = 1000;

/**
 * Watches directories and calls `onChange(dir)` once per burst of events in that directory. A
 * directory that does not exist yet is polled for (once a second) and watched, with an `onChange`,
 * when it appears. Watchers and timers never keep the process alive; `close()` releases them all.
 */
export class DirectoryWatcher {
  private readonly watchers = new Map<string, FSWatcher>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly missing = new Set<string>();
  private poller: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly onChange: (dir: string) => void) {}

  add(dir: string): void {
    if (this.closed || this.watchers.has(dir)) return;
    try {
      const watcher = watch(dir, { persistent: false }, () => this.schedule(dir));
      watcher.on('error', () => {
        // The directory went away: watch for it to come back.
        watcher.close();
        this.watchers.delete(dir);
        this.waitFor(dir);
        this.schedule(dir);
      });
      this.watchers.set(dir, watcher);
      this.missing.delete(dir);
    } catch {
      this.waitFor(dir);
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    if (this.poller) clearInterval(this.poller);
    this.poller = undefined;
    this.missing.clear();
  }

  private waitFor(dir: string): void {
    if (this.closed) return;
    this.missing.add(dir);
    this.poller ??= setInterval(() => this.poll(), MISSING_DIR_POLL_MS);
    this.poller.unref();
  }

  private poll(): void {
    for (const dir of [...this.missing]) {
      if (!existsSync(dir)) continue;
      this.add(dir);
      if (this.watchers.has(dir)) this.schedule(dir);
    }
    if (this.missing.size === 0 && this.poller) {
      clearInterval(this.poller);
      this.poller = undefined;
    }
  }

  private schedule(dir: string): void {
    if (this.closed) return;
    const pending = this.timers.get(dir);
    if (pending) clearTimeout(pending);
    const timer = setTimeout(() => {
      this.timers.delete(dir);
      if (!this.closed) this.onChange(dir);
    }, DEBOUNCE_MS);
    timer.unref();
    this.timers.set(dir, timer);
  }
}
