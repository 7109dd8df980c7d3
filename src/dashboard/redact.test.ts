import { describe, expect, it } from 'vitest';
import { HIDDEN, Redactor } from './redact.js';

describe('Redactor', () => {
  const r = new Redactor(['s3cret-value-123', 'short']);

  it('hides known secret values, continuation tokens and JWTs anywhere in text', () => {
    const token = `${Buffer.from(JSON.stringify({ execution_id: 'e', nonce: 'n' })).toString('base64url')}.${'A'.repeat(43)}`;
    const jwt = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.abcdefghijklmnopqrstuvwxyz012345';
    expect(r.text(`use ${token} or ${jwt}; key=s3cret-value-123; short stays`)).toBe(
      `use ${HIDDEN} or ${HIDDEN}; key=${HIDDEN}; short stays`,
    );
  });

  it("hides this server's static bearer tokens (wlt_…) anywhere, not only after Bearer", () => {
    const token = `wlt_${Buffer.alloc(32, 7).toString('base64url')}`;
    expect(r.text(`token=${token}\n"${token}" ${token}.`)).toBe(`token=${HIDDEN}\n"${HIDDEN}" ${HIDDEN}.`);
    expect(r.text('wlt_ short wlt_x')).toBe('wlt_ short wlt_x');
  });

  it('strips terminal controls and bidirectional overrides before it looks for secrets', () => {
    expect(r.text('\x1b[31mred\x1b[0m \x1b]52;c;Y2xpcA==\x07x\u202ey\r\nz\x00')).toBe('red xy\nz');
    // A secret split by a colour code is whole again, so it is found.
    expect(r.text('key=s3cret-\x1b[1mvalue-123')).toBe(`key=${HIDDEN}`);
  });

  it('hides a secret written in hex, upper case, or wrapped over lines', () => {
    const secret = 's3cret-value-123';
    const hex = Buffer.from(secret).toString('hex');
    for (const form of [hex.toUpperCase(), secret.toUpperCase(), `${hex.slice(0, 10)}\r\n${hex.slice(10)}`]) {
      expect(r.text(`a ${form} b`), form).toBe(`a ${HIDDEN} b`);
    }
  });

  it('hides a secret with markup characters in its HTML and JSON forms too', () => {
    const odd = new Redactor(['pa"ss<&>word']);
    expect(odd.text('a pa&quot;ss&lt;&amp;&gt;word b pa\\"ss<&>word c pa"ss<&>word')).toBe(
      `a ${HIDDEN} b ${HIDDEN} c ${HIDDEN}`,
    );
  });

  it('hides string values under credential-like keys, at any depth, and leaves the rest', () => {
    expect(
      r.json({
        api_key: 'k',
        nested: [{ Authorization: 'Bearer x', password: 'p', count: 3 }],
        max_tokens: 5,
        note: 's3cret-value-123',
      }),
    ).toEqual({
      api_key: HIDDEN,
      nested: [{ Authorization: HIDDEN, password: HIDDEN, count: 3 }],
      max_tokens: 5,
      note: HIDDEN,
    });
  });

  it('reads the secrets of an environment: credential-like variables only', () => {
    const env = {
      WORKFLOWLOOKUP_CATALOG_X_TOKEN: 'catalog-token-value',
      PATH: '/usr/bin:/bin',
      HOME: '/home/someone',
    };
    const fromEnv = Redactor.forEnvironment('/nonexistent', env, 'the-token-secret-of-32-characters!');
    expect(fromEnv.text('catalog-token-value /usr/bin:/bin the-token-secret-of-32-characters!')).toBe(
      `${HIDDEN} /usr/bin:/bin ${HIDDEN}`,
    );
  });

  // Quadratic or worse on these sizes runs past the test's timeout, which is the bound; no wall-clock
  // assertion (a loaded machine made a 5 s one fail).
  it('scans hostile text in linear time', () => {
    r.text('eyJ'.repeat(300_000));
    r.text(`eyJ${'a'.repeat(1_000_000)}`);
    r.text(`${'eyJaaaaaaaaaaaa.'.repeat(50_000)}`);
  });
  it('hides a secret in the forms the catalog scrubber knows: base64 at any alignment, URL-encoded', () => {
    const secret = 'catalog-api-token-0123456789';
    const env = { WORKFLOWLOOKUP_CATALOG_DEMO_TOKEN: secret };
    const redact = Redactor.forEnvironment('/nonexistent', env);
    for (const text of [
      Buffer.from(`user:${secret}`).toString('base64'),
      Buffer.from(`xy${secret}`).toString('base64url'),
      encodeURIComponent(`${secret}/?`),
    ]) {
      expect(redact.text(`before ${text} after`), text).toContain(HIDDEN);
      expect(redact.text(`before ${text} after`), text).not.toContain(text);
    }
  });

  it('hides numbers under credential-like keys, and numbers equal to a secret, but not counts', () => {
    const redact = new Redactor(['12345678901234']);
    expect(
      redact.json({
        apiKey: 12_345_678_901,
        nested: { password: 1234 },
        max_tokens: 4096,
        n: 12_345_678_901_234,
      }),
    ).toEqual({ apiKey: HIDDEN, nested: { password: HIDDEN }, max_tokens: 4096, n: HIDDEN });
  });
});
