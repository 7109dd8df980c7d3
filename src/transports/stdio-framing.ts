import { RpcCode } from '../protocol/error-mapping.js';
import type { MessageChannel } from '../protocol/rules.js';

type Json = Record<string, unknown>;

/**
 * Newline-delimited JSON on a pair of streams, with a per-message byte limit. Every line becomes a
 * parsed value for the protocol rules, or an "unreadable" report (invalid JSON, over the limit) that
 * they answer in arrival order. The SDK's ReadBuffer is not used: it skips invalid JSON silently,
 * schema-checks each line (so an odd id is lost instead of answered) and, past its limit, drops every
 * buffered message rather than the oversized one; seed 001 needs all three answered.
 */
export class StdioFraming implements MessageChannel {
  onmessage?: (message: unknown) => void;
  onunreadable?: MessageChannel['onunreadable'];
  onend?: () => void;
  onclose?: () => void;
  onerror?: (error: Error) => void;

  private chunks: Buffer[] = [];
  private buffered = 0;
  private discarding = false;
  private closed = false;

  constructor(
    private readonly stdin: NodeJS.ReadableStream,
    private readonly stdout: NodeJS.WritableStream,
    private readonly maxBytes: number,
    /** What was read before this framing took over (the stdio prelude), processed first. */
    private readonly before?: { replay: Buffer; ended: boolean },
  ) {}

  async start(): Promise<void> {
    if (this.before !== undefined) {
      if (this.before.replay.length > 0) this.onData(this.before.replay);
      if (this.before.ended) {
        this.onEnd();
        return;
      }
    }
    this.stdin.on('data', this.onData);
    this.stdin.on('end', this.onEnd);
    this.stdin.on('error', this.onStreamError);
    // The prelude paused the stream to hand it over; a new listener alone does not resume it.
    if (this.before !== undefined) this.stdin.resume();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.stdin.off('data', this.onData);
    this.stdin.off('end', this.onEnd);
    this.stdin.off('error', this.onStreamError);
    this.stdin.pause();
    this.onclose?.();
  }

  /** Writes one message as one line; a value that cannot be serialized throws before anything is written. */
  async send(message: Json): Promise<void> {
    if (this.closed) return;
    const line = `${JSON.stringify(message)}\n`;
    this.stdout.write(line);
  }

  private readonly onStreamError = (error: Error) => this.onerror?.(error);

  private readonly onEnd = () => this.onend?.();

  private readonly onData = (chunk: Buffer | string) => {
    let data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let nl = data.indexOf(10); nl !== -1; nl = data.indexOf(10)) {
      const head = data.subarray(0, nl);
      data = data.subarray(nl + 1);
      if (this.discarding) {
        this.discarding = false;
        this.chunks = [];
        this.buffered = 0;
        this.tooLarge();
        continue;
      }
      const line = this.chunks.length > 0 ? Buffer.concat([...this.chunks, head]) : head;
      this.chunks = [];
      this.buffered = 0;
      if (line.length > this.maxBytes) this.tooLarge();
      else this.onLine(line);
    }
    if (data.length === 0 || this.discarding) return;
    this.buffered += data.length;
    if (this.buffered > this.maxBytes) {
      // Drop what we hold; the rest of this line is skipped up to its newline.
      this.discarding = true;
      this.chunks = [];
      this.buffered = 0;
      return;
    }
    this.chunks.push(Buffer.from(data));
  };

  private tooLarge(): void {
    this.onunreadable?.({
      code: RpcCode.InvalidRequest,
      message: 'Invalid Request',
      data: { details: `message exceeds the ${this.maxBytes}-byte limit and was discarded` },
    });
  }

  private onLine(bytes: Buffer): void {
    const raw = bytes.toString('utf8');
    const text = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (text.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      this.onunreadable?.({
        code: RpcCode.ParseError,
        message: 'Parse error',
        data: { details: (error as Error).message.slice(0, 200) },
      });
      return;
    }
    this.onmessage?.(value);
  }
}
