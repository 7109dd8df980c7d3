import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import type { MessageChannel } from './rules.js';

/**
 * An SDK transport (HTTP, in-memory) as a message channel for the protocol rules: what it receives is
 * handed to the rules unchecked, and what the rules send goes out through it.
 */
export function channelOf(transport: Transport): MessageChannel {
  const channel: MessageChannel = {
    start: () => transport.start(),
    close: () => transport.close(),
    send: (message, options) => transport.send(message as JSONRPCMessage, options),
    get sessionId() {
      return transport.sessionId;
    },
  };
  transport.onmessage = (message, extra) => channel.onmessage?.(message, extra);
  transport.onclose = () => channel.onclose?.();
  transport.onerror = (error) => channel.onerror?.(error);
  return channel;
}
