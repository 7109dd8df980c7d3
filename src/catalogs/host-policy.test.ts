import { describe, expect, it } from 'vitest';
import { HostPolicy, HostRefused, ipv6Bytes, isPublicAddress, parseAllowList } from './host-policy.js';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.1.2.3',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '100.64.0.1',
    '224.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    '[::1]',
    '0:0:0:0:0:0:0:1',
    'fe80::1',
    'fe80::1%eth0',
    'fd00::1',
    'fc12:3456::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:a9fe:a9fe',
    '::127.0.0.1',
    '64:ff9b::7f00:1',
    '64:ff9b::10.0.0.1',
    '2002:7f00:1::1',
    '2002:c0a8:101::',
    '2001::1',
    'not an address',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '192.169.0.1',
    '100.128.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });
});

describe('ipv6Bytes', () => {
  it('expands compressed forms and dotted tails', () => {
    expect([...(ipv6Bytes('::1') ?? [])]).toEqual([...new Array(15).fill(0), 1]);
    expect([...(ipv6Bytes('::ffff:1.2.3.4') ?? [])].slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect([...(ipv6Bytes('2001:db8::8:1') ?? [])]).toEqual([
      0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 8, 0, 1,
    ]);
    expect(ipv6Bytes('1.2.3.4')).toBeUndefined();
  });
});

describe('parseAllowList', () => {
  it('accepts hosts, ports, IPv6 literals, subnets and *', () => {
    expect(parseAllowList(' 127.0.0.1:8080, localhost ,[::1]:9000,10.0.0.0/8,fd00::/8,*,')).toEqual({
      entries: ['127.0.0.1:8080', 'localhost', '[::1]:9000', '10.0.0.0/8', 'fd00::/8', '*'],
      problems: [],
    });
  });

  it('reports entries that are not hosts', () => {
    const { problems } = parseAllowList('http://x/y,10.0.0.0/99,a b');
    expect(problems).toHaveLength(3);
  });
});

describe('HostPolicy', () => {
  const url = (u: string) => new URL(u);

  it('lets public addresses through and refuses private ones, naming the setting', () => {
    const policy = new HostPolicy();
    expect(() => policy.check(url('https://api.example.com/v1'), '93.184.216.34')).not.toThrow();
    expect(() => policy.check(url('http://127.0.0.1:4010/api'), '127.0.0.1')).toThrow(HostRefused);
    expect(() => policy.check(url('http://metadata.internal/'), '169.254.169.254')).toThrow(
      /169\.254\.169\.254.*WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS/,
    );
  });

  it('allows named hosts on their port only, by name or by the address they resolve to', () => {
    const policy = new HostPolicy(['127.0.0.1:4010', 'localhost:5000', '[::1]:6000']);
    expect(() => policy.check(url('http://127.0.0.1:4010/api'), '127.0.0.1')).not.toThrow();
    // Other notations of the same address are the same host once parsed.
    expect(() => policy.check(url('http://2130706433:4010/api'), '127.0.0.1')).not.toThrow();
    expect(() => policy.check(url('http://127.0.0.1:4011/api'), '127.0.0.1')).toThrow(HostRefused);
    expect(() => policy.check(url('http://localhost:5000/'), '127.0.0.1')).not.toThrow();
    expect(() => policy.check(url('http://localhost:5001/'), '127.0.0.1')).toThrow(HostRefused);
    expect(() => policy.check(url('http://[::1]:6000/'), '::1')).not.toThrow();
    expect(() => policy.check(url('http://[0:0::1]:6000/'), '::1')).not.toThrow();
    expect(() => policy.check(url('http://127.0.0.2:4010/'), '127.0.0.2')).toThrow(HostRefused);
  });

  it('allows a host on any port without one, subnets, and everything with *', () => {
    const named = new HostPolicy(['api.internal']);
    expect(() => named.check(url('https://api.internal/'), '10.0.0.5')).not.toThrow();
    expect(() => named.check(url('https://other.internal/'), '10.0.0.5')).toThrow(HostRefused);
    const subnet = new HostPolicy(['10.0.0.0/8']);
    expect(() => subnet.check(url('https://x.internal:8443/'), '10.9.8.7')).not.toThrow();
    expect(() => subnet.check(url('https://x.internal:8443/'), '192.168.0.1')).toThrow(HostRefused);
    expect(() => new HostPolicy(['*']).check(url('http://localhost/'), '127.0.0.1')).not.toThrow();
  });
});
