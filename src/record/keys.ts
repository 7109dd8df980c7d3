// The server's record-signing keys (Ed25519). A key is the operator's (WORKFLOWLOOKUP_RECORD_KEY, the
// same file on every replica: keys are shared by configuration, never through the database) or
// generated into the data dir on first use (record-keys.json, mode 0600). Each key has an id, the
// sha256 of its public key (SPKI DER), so a record names the key it was signed with. Rotation makes a
// new key current and keeps the old public halves published, so records signed before still verify;
// revoking a key removes it from what is published, so records signed with it no longer do.
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  randomBytes,
} from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const RECORD_KEYS_FILE = 'record-keys.json';

/** One published key: a JSON Web Key (RFC 8037, OKP/Ed25519) with our key id. */
export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
  /** When it stopped signing (rotated out of use; records it signed still verify). */
  retired_at?: string;
}

export interface Jwks {
  keys: PublicJwk[];
}

/** What a failed key operation says: a value, mapped to an exit code by the CLI. */
export class RecordKeyError extends Error {}

interface StoredKey {
  keyid: string;
  created_at: string;
  public_pem: string;
  /** Only the current key keeps its private half: a retired key never signs again. */
  private_pem?: string;
  retired_at?: string;
}

interface KeyFile {
  version: 1;
  current: string;
  keys: StoredKey[];
}

/** The key id of a public key: hex sha256 of its SPKI DER encoding. */
export function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex');
}

function jwkOf(publicKey: KeyObject, retiredAt?: string): PublicJwk {
  const jwk = publicKey.export({ format: 'jwk' }) as { x?: string; crv?: string };
  if (jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') throw new RecordKeyError('not an Ed25519 key');
  return {
    kty: 'OKP',
    crv: 'Ed25519',
    x: jwk.x,
    kid: keyIdOf(publicKey),
    alg: 'EdDSA',
    use: 'sig',
    ...(retiredAt !== undefined ? { retired_at: retiredAt } : {}),
  };
}

function ed25519(key: KeyObject, what: string): KeyObject {
  if (key.asymmetricKeyType !== 'ed25519')
    throw new RecordKeyError(
      `${what} is a ${key.asymmetricKeyType ?? 'symmetric'} key; records are signed with Ed25519`,
    );
  return key;
}

/** A PEM text, or the path of a file holding one (what WORKFLOWLOOKUP_RECORD_KEY may be). */
function pemFrom(value: string): { pem: string; where: string } {
  if (value.trimStart().startsWith('-----BEGIN')) return { pem: value, where: 'WORKFLOWLOOKUP_RECORD_KEY' };
  try {
    return { pem: readFileSync(value, 'utf8'), where: value };
  } catch (error) {
    throw new RecordKeyError(`cannot read the record key ${value}: ${(error as Error).message}`);
  }
}

/**
 * Public keys a verifier trusts, from a file's text: a JWKS (`{"keys": [...]}`, as the server
 * publishes), one JWK, or one or more PEM public keys (or private keys, whose public halves count).
 * Keyed by key id. A key that is not Ed25519 is refused.
 */
export function trustedKeysFrom(text: string, where: string): Map<string, KeyObject> {
  const keys = new Map<string, KeyObject>();
  const add = (key: KeyObject) => keys.set(keyIdOf(ed25519(key, where)), key);
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch (error) {
      throw new RecordKeyError(`${where} is not valid JSON: ${(error as Error).message}`);
    }
    const list = Array.isArray((parsed as Jwks).keys) ? (parsed as Jwks).keys : [parsed];
    for (const jwk of list) {
      try {
        add(createPublicKey({ key: jwk as unknown as import('node:crypto').JsonWebKey, format: 'jwk' }));
      } catch (error) {
        if (error instanceof RecordKeyError) throw error;
        throw new RecordKeyError(`${where} holds a key that is not a JWK: ${(error as Error).message}`);
      }
    }
  } else {
    const blocks = trimmed.match(/-----BEGIN [A-Z ]+-----[\s\S]+?-----END [A-Z ]+-----/g) ?? [];
    if (blocks.length === 0) throw new RecordKeyError(`${where} holds neither a JWKS nor a PEM key`);
    for (const block of blocks) {
      try {
        add(createPublicKey(block));
      } catch (error) {
        if (error instanceof RecordKeyError) throw error;
        throw new RecordKeyError(`${where} holds a PEM block that is not a key: ${(error as Error).message}`);
      }
    }
  }
  if (keys.size === 0) throw new RecordKeyError(`${where} holds no keys`);
  return keys;
}

export interface KeyringOptions {
  /** Where record-keys.json lives (the server's data dir). */
  dataDir: string;
  /** WORKFLOWLOOKUP_RECORD_KEY: a PEM Ed25519 private key, or the path of a file holding one. */
  configuredKey?: string;
  /** WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS: a file of older public keys (JWKS or PEM) still published. */
  publicKeysFile?: string;
  now?: () => Date;
}

/** The signing key in use and every key the server publishes. */
export class RecordKeyring {
  private loaded: { signing: { keyid: string; key: KeyObject }; published: PublicJwk[] } | undefined;

  constructor(private readonly options: KeyringOptions) {}

  private get file(): string {
    return join(this.options.dataDir, RECORD_KEYS_FILE);
  }

  private now(): string {
    return (this.options.now?.() ?? new Date()).toISOString();
  }

  /** The key records are signed with now (generated into the data dir on first use). */
  signing(): { keyid: string; key: KeyObject } {
    return this.load().signing;
  }

  /** What the server publishes (the well-known URL, `workflowlookup keys`): current first. */
  jwks(): Jwks {
    return { keys: this.load().published };
  }

  /**
   * The published keys if this host has any (a configured key, or the data dir's file), without ever
   * generating one: what `verify` trusts by default, where a fresh key would trust nothing it is shown.
   */
  existingJwks(): Jwks | undefined {
    if (this.options.configuredKey === undefined && this.read() === undefined) return undefined;
    return this.jwks();
  }

  /** Where the signing key comes from, for `workflowlookup keys` (never the key itself). */
  source(): string {
    return this.options.configuredKey !== undefined ? 'WORKFLOWLOOKUP_RECORD_KEY' : this.file;
  }

  private load() {
    if (this.loaded !== undefined) return this.loaded;
    const extra = this.extraPublished();
    if (this.options.configuredKey !== undefined) {
      const { pem, where } = pemFrom(this.options.configuredKey);
      let key: KeyObject;
      try {
        key = ed25519(createPrivateKey(pem), where);
      } catch (error) {
        if (error instanceof RecordKeyError) throw error;
        throw new RecordKeyError(`${where} is not a PEM private key: ${(error as Error).message}`);
      }
      const jwk = jwkOf(createPublicKey(key));
      this.loaded = {
        signing: { keyid: jwk.kid, key },
        published: [jwk, ...extra.filter((k) => k.kid !== jwk.kid)],
      };
      return this.loaded;
    }
    const stored = this.readOrCreate();
    const current = stored.keys.find((k) => k.keyid === stored.current);
    if (current?.private_pem === undefined)
      throw new RecordKeyError(`${this.file} is damaged: its current key has no private half`);
    const published = stored.keys.map((k) => jwkOf(createPublicKey(k.public_pem), k.retired_at));
    this.loaded = {
      signing: { keyid: current.keyid, key: createPrivateKey(current.private_pem) },
      published: [
        ...published.filter((k) => k.kid === current.keyid),
        ...published.filter((k) => k.kid !== current.keyid),
        ...extra.filter((k) => !published.some((p) => p.kid === k.kid)),
      ],
    };
    return this.loaded;
  }

  private extraPublished(): PublicJwk[] {
    const file = this.options.publicKeysFile;
    if (file === undefined) return [];
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch (error) {
      throw new RecordKeyError(
        `cannot read WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS ${file}: ${(error as Error).message}`,
      );
    }
    return [...trustedKeysFrom(text, file).values()].map((k) => jwkOf(k));
  }

  private read(): KeyFile | undefined {
    let text: string;
    try {
      text = readFileSync(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw error;
    }
    try {
      const parsed = JSON.parse(text) as KeyFile;
      if (parsed.version !== 1 || !Array.isArray(parsed.keys)) throw new Error('unknown layout');
      return parsed;
    } catch (error) {
      throw new RecordKeyError(
        `${this.file} is damaged (${(error as Error).message}); restore it from a backup`,
      );
    }
  }

  private fresh(): StoredKey {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    return {
      keyid: keyIdOf(publicKey),
      created_at: this.now(),
      public_pem: publicKey.export({ type: 'spki', format: 'pem' }) as string,
      private_pem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    };
  }

  /**
   * The data dir's keys, generated on first use. The file appears complete or not at all (written
   * aside, then hard-linked into place), so two processes starting together sign with the same key.
   */
  private readOrCreate(): KeyFile {
    const existing = this.read();
    if (existing !== undefined) return existing;
    mkdirSync(this.options.dataDir, { recursive: true, mode: 0o700 });
    const key = this.fresh();
    const aside = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(aside, `${JSON.stringify({ version: 1, current: key.keyid, keys: [key] }, null, 2)}\n`, {
      mode: 0o600,
    });
    try {
      linkSync(aside, this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      unlinkSync(aside);
    }
    chmodSync(this.file, 0o600);
    return this.read() as KeyFile;
  }

  private write(keys: KeyFile): void {
    const aside = `${this.file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(aside, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
    renameSync(aside, this.file);
    this.loaded = undefined;
  }

  private ownKeys(what: string): KeyFile {
    if (this.options.configuredKey !== undefined)
      throw new RecordKeyError(
        `the record key is configured (WORKFLOWLOOKUP_RECORD_KEY): ${what} it where it is kept, and list older public keys in WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS`,
      );
    return this.readOrCreate();
  }

  /**
   * A new key signs from now on; the old one is retired (its private half dropped, its public half
   * still published, so the records it signed still verify). Running servers read the file at start.
   */
  rotate(): { retired: string; current: string } {
    const keys = this.ownKeys('rotate');
    const at = this.now();
    const key = this.fresh();
    const retired = keys.current;
    keys.keys = [
      key,
      ...keys.keys.map(({ private_pem: _dropped, ...k }) =>
        k.retired_at === undefined ? { ...k, retired_at: at } : k,
      ),
    ];
    keys.current = key.keyid;
    this.write(keys);
    return { retired, current: key.keyid };
  }

  /** A retired key is no longer published: records it signed stop verifying against what we publish. */
  revoke(keyid: string): void {
    const keys = this.ownKeys('revoke keys');
    if (keyid === keys.current)
      throw new RecordKeyError(
        `key ${keyid} signs now; rotate first (workflowlookup keys rotate), then revoke it`,
      );
    const kept = keys.keys.filter((k) => k.keyid !== keyid);
    if (kept.length === keys.keys.length) throw new RecordKeyError(`no key ${keyid} in ${this.file}`);
    keys.keys = kept;
    this.write(keys);
  }
}
