import { describe, expect, it } from 'vitest';
import { Scrubber } from './credentials.js';
import { safeUrl } from './http-runner.js';

describe('safeUrl', () => {
  it('drops user info, hides secret-looking query values and every known credential value', () => {
    expect(
      safeUrl(new URL('https://user:pw@api.test/v1/items?page=2&api_key=k1&access_token=t2&sig=s3')),
    ).toBe('https://api.test/v1/items?page=2&api_key=***&access_token=***&sig=***');
    expect(
      safeUrl(
        new URL('https://api.test/v1/items/abcd-secret-1234?q=abcd-secret-1234'),
        new Scrubber(['abcd-secret-1234']),
      ),
    ).toBe('https://api.test/v1/items/***?q=***');
    expect(safeUrl(new URL('https://api.test/plain?status=open'))).toBe('https://api.test/plain?status=open');
  });
});
