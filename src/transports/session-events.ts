import type { EventId, EventStore, JSONRPCMessage, StreamId } from '@modelcontextprotocol/server';

/**
 * The events of one 2025-11-25 session, kept so a client that lost its SSE stream can resume it with
 * Last-Event-ID. Bounded: the oldest events go first. One store per session, because the SDK names
 * every session's standalone stream alike.
 */
export class SessionEvents implements EventStore {
  private next = 0;
  private readonly events = new Map<EventId, { stream: StreamId; message: JSONRPCMessage; n: number }>();

  constructor(private readonly max = 1000) {}

  async storeEvent(stream: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const n = ++this.next;
    const id = `${stream}:${n}`;
    this.events.set(id, { stream, message, n });
    if (this.events.size > this.max) {
      const oldest = this.events.keys().next().value;
      if (oldest !== undefined) this.events.delete(oldest);
    }
    return id;
  }

  async getStreamIdForEventId(id: EventId): Promise<StreamId | undefined> {
    return this.events.get(id)?.stream;
  }

  async replayEventsAfter(
    lastId: EventId,
    { send }: { send: (id: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const last = this.events.get(lastId);
    if (last === undefined) return '';
    for (const [id, e] of this.events) {
      if (e.stream === last.stream && e.n > last.n) await send(id, e.message);
    }
    return last.stream;
  }
}
