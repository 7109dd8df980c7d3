import { type FSWatcher, watch } from 'node:fs';

export const DEBOUNCE_MS = 50;

/**
 * Watches directories and calls `onChange(dir)` once per burst of events in that directory. Watchers
 * and timers never keep the process alive; `close()` releases them all. A directory that does not
 * exist is not watched.
 */
export class DirectoryWatcher {
  private readonly watchers: FSWatcher[] = [];
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private closed = false;

  constructor(private readonly onChange: (dir: string) => void) {}

  add(dir: string): void {
    if (this.closed) return;
    try {
      const watcher = watch(dir, { persistent: false }, () => this.schedule(dir));
      watcher.on('error', () => watcher.close());
      this.watchers.push(watcher);
    } catch {
      // missing directory: nothing to watch
    }
  }

  close(): void {
    this.closed = true;
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
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
