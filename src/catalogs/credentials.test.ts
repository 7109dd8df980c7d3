import { describe, expect, it } from 'vitest';
import {
  configuredSecrets,
  credentialHeaders,
  defaultAuthEnv,
  originOf,
  REDACTED,
  Scrubber,
  secretForms,
} from './credentials.js';

const SECRET = 'sk/live+tok=en_ü"42';

describe('Scrubber', () => {
  const scrubber = new Scrubber([SECRET]);

  it('removes the secret as is, URL-encoded and JSON-escaped', () => {
    for (const form of [
      SECRET,
      encodeURIComponent(SECRET),
      encodeURIComponent(SECRET).toLowerCase(),
      JSON.stringify(SECRET).slice(1, -1),
      JSON.stringify(SECRET).slice(1, -1).replaceAll('/', '\\/').replace('ü', '\\u00fc'),
    ]) {
      const out = scrubber.text(`before ${form} after`);
      expect(out, form).toBe(`before ${REDACTED} after`);
    }
  });

  it('removes the secret base64-encoded at any alignment, in both alphabets', () => {
    for (const prefix of ['', 'a', 'ab', 'Bearer ', 'user:', '{"token":"']) {
      for (const encoding of ['base64', 'base64url'] as const) {
        const encoded = Buffer.from(`${prefix}${SECRET}-and more text`).toString(encoding);
        const out = scrubber.text(`x ${encoded} y`);
        expect(out, `${prefix} ${encoding}`).toContain(REDACTED);
        // What is left cannot be decoded back to the secret.
        for (const piece of out.split(/\s|\*\*\*/)) {
          expect(Buffer.from(piece, encoding).toString('utf8')).not.toContain(SECRET);
        }
      }
    }
  });

  it('removes the secret in hex (either case), in any case, and split across lines', () => {
    const secret = 'wf-Secret-0123456789abcdef';
    const s = new Scrubber([secret]);
    const hex = Buffer.from(secret).toString('hex');
    const wrapped = (text: string, at: number, br: string) =>
      text.replace(new RegExp(`(.{${at}})`, 'g'), `$1${br}`);
    for (const form of [
      hex,
      hex.toUpperCase(),
      secret.toUpperCase(),
      secret.toLowerCase(),
      `${secret.slice(0, 9)}\n${secret.slice(9)}`,
      `${secret.slice(0, 1)}\r\n${secret.slice(1)}`,
      wrapped(hex, 16, '\n'),
      wrapped(hex.toUpperCase(), 7, '\r\n'),
      wrapped(Buffer.from(`xx${secret}yy`).toString('base64'), 8, '\n'),
    ]) {
      const out = s.text(`before ${form} after`);
      expect(out, JSON.stringify(form)).toMatch(/^before [\s\S]*\*\*\*[\s\S]* after$/);
      expect(out.replace(/\s/g, '').toLowerCase(), JSON.stringify(form)).not.toContain(
        secret.slice(2, -2).toLowerCase(),
      );
    }
    // A secret that holds a line break (a PEM key) is found whichever line breaks it is written with.
    const pem = new Scrubber(['line-one-of-key\nline-two-of-key']);
    expect(pem.text('k: line-one-of-key\r\nline-two-of-key.')).toBe(`k: ${REDACTED}.`);
  });

  // Quadratic time on these sizes runs past the test's timeout, which is the bound (no wall clock).
  it('scans a long text once, however the secrets and the text overlap', () => {
    const s = new Scrubber([`${'a'.repeat(63)}b`, 'ab'.repeat(20), 'a\nb'.repeat(10)]);
    const n = 1 << 20;
    expect(s.text('a'.repeat(n))).toBe('a'.repeat(n));
    expect(s.text('ab'.repeat(n / 2))).toBe(REDACTED);
    expect(s.text('a\n'.repeat(n / 2)).length).toBe(n);
  });

  it('scrubs JSON values deeply: strings, keys and numbers', () => {
    const numeric = new Scrubber(['12345678']);
    expect(
      numeric.value({ a: [1, 12345678, { '12345678': 'v', s: 'id 12345678' }], b: null, c: true }),
    ).toEqual({ a: [1, REDACTED, { [REDACTED]: 'v', s: `id ${REDACTED}` }], b: null, c: true });
    expect(scrubber.value({ nested: [{ deep: `Bearer ${SECRET}` }] })).toEqual({
      nested: [{ deep: `Bearer ${REDACTED}` }],
    });
  });

  it('leaves text alone without secrets, and ignores values too short to be secrets', () => {
    expect(new Scrubber([]).value({ a: 'b' })).toEqual({ a: 'b' });
    expect(secretForms('abc')).toEqual([]);
    expect(new Scrubber(['abc']).text('abcabc')).toBe('abcabc');
  });
});

describe('credentials', () => {
  it('reads credentials from the environment and lists every value to scrub', () => {
    const basic = defaultAuthEnv('my-api', 'basic');
    expect(basic).toEqual({
      type: 'basic',
      username_env: 'WORKFLOWLOOKUP_CATALOG_MY_API_USERNAME',
      password_env: 'WORKFLOWLOOKUP_CATALOG_MY_API_PASSWORD',
    });
    const env = {
      WORKFLOWLOOKUP_CATALOG_MY_API_USERNAME: 'me',
      WORKFLOWLOOKUP_CATALOG_MY_API_PASSWORD: 'pw-123',
    };
    const { headers, secrets } = credentialHeaders('my-api', basic, env);
    expect(headers.authorization).toBe(`Basic ${Buffer.from('me:pw-123').toString('base64')}`);
    expect(secrets).toEqual(['pw-123', 'me:pw-123', Buffer.from('me:pw-123').toString('base64')]);
    expect(() => credentialHeaders('my-api', basic, {})).toThrow(/WORKFLOWLOOKUP_CATALOG_MY_API_USERNAME/);
    expect(
      configuredSecrets([basic], {
        ...env,
        WORKFLOWLOOKUP_CATALOG_OTHER_TOKEN: 'other-1',
        UNRELATED: 'x',
      }).sort(),
    ).toEqual(['me:pw-123', 'other-1', 'pw-123']);
  });

  it('writes origins with their port', () => {
    expect(originOf('https://api.example.com/v1')).toBe('https://api.example.com:443');
    expect(originOf('http://127.0.0.1:4010/api')).toBe('http://127.0.0.1:4010');
    expect(originOf('http://2130706433/')).toBe('http://127.0.0.1:80');
    expect(originOf('ftp://x/')).toBeUndefined();
    expect(originOf('nope')).toBeUndefined();
  });
});
