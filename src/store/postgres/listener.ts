import pg from 'pg';
import type { Logger } from '../../telemetry/log.js';

/** What a subscriber hears: a notification on its channel, or that notifications may have been missed. */
export interface ChannelSubscriber {
  channel: string;
  notify(payload: string): void;
  /** The listening connection was (re)established: anything may have changed meanwhile. */
  resync(): void;
}

export interface ListenerOptions {
  url: string;
  channels: readonly string[];
  log?: Logger | undefined;
  /** Words for an error (connection problems named, never the password). */
  describe: (error: unknown) => string;
  /** How often an idle listening connection is checked (default 10 s). */
  pingMs?: number;
}

const FIRST_RETRY_MS = 200;
const MAX_RETRY_MS = 5000;
const CONNECT_TIMEOUT_MS = 10_000;

/**
 * One connection that LISTENs on the store's channels while anyone subscribes. A connection that is
 * lost (the server restarted, an administrator ended it, the network dropped it silently, which a
 * periodic ping notices) is reopened with a growing pause, and every subscriber is told to resync,
 * since notifications sent meanwhile are gone. The connection is named
 * `workflowlookup-listen-<pid>` so an operator can tell the replicas apart in pg_stat_activity.
 */
export class NotificationListener {
  private readonly subscribers = new Set<ChannelSubscriber>();
  private client: pg.Client | undefined;
  private connecting = false;
  private retry: NodeJS.Timeout | undefined;
  private ping: NodeJS.Timeout | undefined;
  private pauseMs = FIRST_RETRY_MS;
  private closed = false;
  private failures = 0;

  constructor(private readonly options: ListenerOptions) {}

  /** Whether notifications are flowing now. */
  get connected(): boolean {
    return this.client !== undefined;
  }

  subscribe(subscriber: ChannelSubscriber): () => void {
    this.subscribers.add(subscriber);
    this.start();
    return () => {
      this.subscribers.delete(subscriber);
      if (this.subscribers.size === 0) this.stop();
    };
  }

  close(): void {
    this.closed = true;
    this.subscribers.clear();
    this.stop();
  }

  private start(): void {
    if (this.closed || this.client !== undefined || this.connecting || this.retry !== undefined) return;
    this.connecting = true;
    void this.connect().finally(() => {
      this.connecting = false;
    });
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({
      connectionString: this.options.url,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      application_name: `workflowlookup-listen-${process.pid}`,
      keepAlive: true,
    });
    let lost = false;
    const onLost = (error?: Error) => {
      if (lost) return;
      lost = true;
      if (this.client === client) {
        this.client = undefined;
        this.stopPing();
        if (!this.closed && this.subscribers.size > 0) {
          this.options.log?.warn(
            `PostgreSQL listening connection lost${error ? `: ${this.options.describe(error)}` : ''}; reconnecting`,
          );
          this.later();
        }
      }
      client.end().catch(() => undefined);
    };
    client.on('error', onLost);
    client.on('end', () => onLost());
    client.on('notification', (message) => {
      for (const s of [...this.subscribers])
        if (s.channel === message.channel) s.notify(message.payload ?? '');
    });
    try {
      await client.connect();
      for (const channel of this.options.channels) await client.query(`LISTEN ${channel}`);
    } catch (error) {
      lost = true;
      await client.end().catch(() => undefined);
      if (this.failures++ === 0)
        this.options.log?.warn(`PostgreSQL LISTEN failed: ${this.options.describe(error)}`);
      this.later();
      return;
    }
    if (this.closed || this.subscribers.size === 0 || lost) {
      lost = true;
      await client.end().catch(() => undefined);
      if (!this.closed && this.subscribers.size > 0) this.later();
      return;
    }
    if (this.failures > 0) this.options.log?.info('PostgreSQL listening connection restored');
    this.failures = 0;
    this.pauseMs = FIRST_RETRY_MS;
    this.client = client;
    this.startPing(client);
    for (const s of [...this.subscribers]) s.resync();
  }

  /** Tries again after a pause that doubles up to 5 s. */
  private later(): void {
    if (this.closed || this.subscribers.size === 0 || this.retry !== undefined) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.start();
    }, this.pauseMs);
    this.retry.unref();
    this.pauseMs = Math.min(this.pauseMs * 2, MAX_RETRY_MS);
  }

  /** A connection whose peer vanished without a word answers no query: end it, and reconnect. */
  private startPing(client: pg.Client): void {
    this.ping = setInterval(() => {
      let answered = false;
      const timer = setTimeout(() => {
        if (!answered) client.emit('error', new Error('the listening connection stopped answering'));
      }, 5000);
      timer.unref();
      client.query('SELECT 1').then(
        () => {
          answered = true;
          clearTimeout(timer);
        },
        (error: Error) => {
          answered = true;
          clearTimeout(timer);
          client.emit('error', error);
        },
      );
    }, this.options.pingMs ?? 10_000);
    this.ping.unref();
  }

  private stopPing(): void {
    if (this.ping !== undefined) clearInterval(this.ping);
    this.ping = undefined;
  }

  private stop(): void {
    if (this.retry !== undefined) clearTimeout(this.retry);
    this.retry = undefined;
    this.stopPing();
    const client = this.client;
    this.client = undefined;
    client?.end().catch(() => undefined);
  }
}
