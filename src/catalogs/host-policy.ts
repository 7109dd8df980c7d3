/**
 * Which hosts the server may call: catalog APIs and URL catalog sources. Public addresses only, unless
 * the operator names a private host in WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS. The check runs on every
 * address a host name resolves to, and again on the address a socket actually connected to, so neither
 * a literal in an odd notation (`2130706433`, `0x7f.1`, `[::ffff:7f00:1]`) nor DNS rebinding gets a
 * request, with its credential, to loopback, link-local (cloud metadata), private or unique-local space.
 */
import { BlockList, isIP } from 'node:net';

export const PRIVATE_HOSTS_SETTING = 'WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS';

/** A refused destination; `detail` says which address and how to allow it. */
export class HostRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HostRefused';
  }
}

/** Special-purpose IPv4 ranges (RFC 6890 and friends): nothing an API on the internet lives in. */
const BLOCKED_V4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"; 0.0.0.0 reaches the local host
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, where cloud metadata services answer
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and the broadcast address
];

const BLOCKED_V6: readonly [string, number][] = [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible form
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard
  ['2001::', 32], // Teredo: the client address inside cannot be trusted
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique-local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
];

const blocked = new BlockList();
for (const [net, prefix] of BLOCKED_V4) blocked.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of BLOCKED_V6) blocked.addSubnet(net, prefix, 'ipv6');

/** An IPv6 address as 16 bytes (zone id dropped), or undefined when it is not one. */
export function ipv6Bytes(text: string): Uint8Array | undefined {
  const address = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  if (isIP(address) !== 6) return undefined;
  let head = address;
  const tailV4: number[] = [];
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(address);
  if (dotted?.[1] && dotted[2]) {
    head = dotted[1].endsWith('::') ? dotted[1] : dotted[1].slice(0, -1);
    tailV4.push(...dotted[2].split('.').map(Number));
  }
  const groupsWanted = 8 - tailV4.length / 2;
  const [left = '', right] = head.split('::') as [string, string | undefined];
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((g) => Number.parseInt(g, 16)));
  const l = parse(left);
  const r = right === undefined ? [] : parse(right);
  const groups =
    right === undefined ? l : [...l, ...new Array<number>(groupsWanted - l.length - r.length).fill(0), ...r];
  if (groups.length !== groupsWanted) return undefined;
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8;
    bytes[i * 2 + 1] = g & 0xff;
  });
  bytes.set(tailV4, 12);
  return bytes;
}

const v4At = (b: Uint8Array, at: number) => `${b[at]}.${b[at + 1]}.${b[at + 2]}.${b[at + 3]}`;

/** The IPv4 address an IPv6 one carries and would reach (mapped, NAT64, 6to4), if any. */
function embeddedV4(b: Uint8Array): string | undefined {
  const zeros = (from: number, to: number) => b.slice(from, to).every((x) => x === 0);
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return v4At(b, 12);
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return v4At(b, 12);
  if (b[0] === 0x20 && b[1] === 0x02) return v4At(b, 2);
  return undefined;
}

/** True for an address on the public internet; false for loopback, private, link-local and the like. */
export function isPublicAddress(address: string): boolean {
  const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return !blocked.check(bare, 'ipv4');
  if (family !== 6) return false;
  const bytes = ipv6Bytes(bare);
  if (!bytes) return false;
  const inner = embeddedV4(bytes);
  if (inner !== undefined && blocked.check(inner, 'ipv4')) return false;
  return !blocked.check(bare, 'ipv6');
}

interface AllowEntry {
  /** Host as the URL parser writes it (lower case, IPs normalised, IPv6 in brackets); absent for subnets. */
  host?: string;
  /** Only this port; any port when absent. */
  port?: number;
  subnet?: BlockList;
  text: string;
}

/** Parses the allow list; returns the problems for the config to report. */
export function parseAllowList(value: string | undefined): { entries: string[]; problems: string[] } {
  const entries: string[] = [];
  const problems: string[] = [];
  for (const raw of (value ?? '').split(',')) {
    const text = raw.trim();
    if (text === '') continue;
    try {
      parseEntry(text);
      entries.push(text);
    } catch (error) {
      problems.push(`"${text}": ${(error as Error).message}`);
    }
  }
  return { entries, problems };
}

function parseEntry(text: string): AllowEntry {
  if (text === '*') return { text };
  const cidr = /^\[?([0-9a-fA-F:.]+)\]?\/(\d{1,3})$/.exec(text);
  if (cidr?.[1] && cidr[2]) {
    const family = isIP(cidr[1]);
    const prefix = Number(cidr[2]);
    if (family === 0 || prefix > (family === 4 ? 32 : 128)) throw new Error('not an IP subnet');
    const subnet = new BlockList();
    subnet.addSubnet(cidr[1], prefix, family === 4 ? 'ipv4' : 'ipv6');
    return { subnet, text };
  }
  let url: URL;
  try {
    url = new URL(`http://${text}`);
  } catch {
    throw new Error('expected host, host:port, [ipv6]:port, or an IP subnet like 10.0.0.0/8');
  }
  if (url.username || url.password || url.pathname !== '/' || url.search || url.hash) {
    throw new Error('expected host, host:port, [ipv6]:port, or an IP subnet like 10.0.0.0/8');
  }
  // `host:80` is normalised to `host` by the URL parser; keep the port the operator wrote.
  const written = /:(\d+)$/.exec(text);
  const port = written?.[1] !== undefined && !text.endsWith(']') ? Number(written[1]) : undefined;
  return { host: url.hostname, ...(port !== undefined ? { port } : {}), text };
}

const effectivePort = (url: URL) => Number(url.port || (url.protocol === 'https:' ? 443 : 80));

/**
 * Decides whether a URL may be called at a given address. Public addresses always may; private ones
 * only when the URL's host (or the address itself, or its subnet) is on the allow list, port included
 * when the entry names one.
 */
export class HostPolicy {
  private readonly entries: AllowEntry[];

  constructor(allow: readonly string[] = []) {
    this.entries = allow.map(parseEntry);
  }

  /** Throws HostRefused when `address` (what `url`'s host resolved to) is not allowed. */
  check(url: URL, address: string): void {
    if (isPublicAddress(address) || this.allows(url, address)) return;
    const bare = address.replace(/^\[|\]$/g, '');
    const shown = bare === url.hostname.replace(/^\[|\]$/g, '') ? url.host : `${url.host} (${bare})`;
    throw new HostRefused(
      `refusing to connect to ${shown}: a loopback, private or link-local address; to allow it, add "${url.host}" to ${PRIVATE_HOSTS_SETTING}`,
    );
  }

  private allows(url: URL, address: string): boolean {
    const port = effectivePort(url);
    const bare = address.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
    const asHost = isIP(bare) === 6 ? `[${normaliseV6(bare)}]` : bare;
    return this.entries.some((e) => {
      if (e.text === '*') return true;
      if (e.subnet) return e.subnet.check(bare, isIP(bare) === 6 ? 'ipv6' : 'ipv4');
      if (e.port !== undefined && e.port !== port) return false;
      return e.host === url.hostname || e.host === asHost;
    });
  }
}

function normaliseV6(address: string): string {
  return new URL(`http://[${address}]`).hostname.replace(/^\[|\]$/g, '');
}
