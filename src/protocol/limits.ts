/** Largest JSON-RPC message a transport accepts unless configured otherwise. */
export const DEFAULT_MAX_MESSAGE_BYTES = 4 * 1024 * 1024;
