// Which IP addresses are public: the one check behind every outbound connection a caller names
// (image inputs, providers/inputs.ts; webhook endpoints, webhooks/ssrf.ts).

import { isIP } from 'node:net';

function ipv4Bytes(ip: string): number[] {
  return ip.split('.').map(Number);
}

function ipv6Bytes(ip: string): number[] {
  let s = ip.split('%')[0]!; // zone ids only occur on link-local addresses, which are refused anyway
  let tail: number[] = [];
  const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (v4) {
    tail = ipv4Bytes(v4[1]!);
    s = s.slice(0, -v4[1]!.length) + '0:0';
  }
  const [head, rest] = s.split('::') as [string, string | undefined];
  const groups = (x: string) => (x === '' ? [] : x.split(':').map((g) => parseInt(g, 16)));
  const h = groups(head);
  const r = rest === undefined ? [] : groups(rest);
  const words = rest === undefined ? h : [...h, ...Array(8 - h.length - r.length).fill(0), ...r];
  const bytes = words.flatMap((w) => [w >> 8, w & 0xff]);
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function inV4(b: number[], net: string, bits: number): boolean {
  const n = ipv4Bytes(net);
  for (let i = 0; i < 4; i++) {
    const take = Math.max(0, Math.min(8, bits - i * 8));
    const mask = (0xff << (8 - take)) & 0xff;
    if ((b[i]! & mask) !== (n[i]! & mask)) return false;
  }
  return true;
}

const V4_BLOCKED: Array<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16],
  ['172.16.0.0', 12], ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16],
  ['198.18.0.0', 15], ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
];

function publicV4(b: number[]): boolean {
  return !V4_BLOCKED.some(([net, bits]) => inV4(b, net, bits));
}

function prefix(b: number[], hex: number[], bits: number): boolean {
  for (let i = 0; i < bits; i++) {
    const byte = i >> 3, bit = 7 - (i & 7);
    if (((b[byte]! >> bit) & 1) !== (((hex[byte] ?? 0) >> bit) & 1)) return false;
  }
  return true;
}

/**
 * Only globally routable unicast passes. IPv6 is allow-listed to 2000::/3 minus special ranges;
 * IPv4-mapped and NAT64 forms are judged by the IPv4 address they carry.
 */
export function isPublicAddress(ip: string): boolean {
  const family = isIP(ip.split('%')[0]!);
  if (family === 4) return publicV4(ipv4Bytes(ip));
  if (family !== 6) return false;
  const b = ipv6Bytes(ip);
  if (prefix(b, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff], 96)) return publicV4(b.slice(12));
  if (prefix(b, [0, 0x64, 0xff, 0x9b], 96)) return publicV4(b.slice(12));
  if (!prefix(b, [0x20], 3)) return false;
  const blocked: Array<[number[], number]> = [
    [[0x20, 0x01, 0x00], 23], // IETF protocol assignments incl. Teredo, benchmarking, ORCHID
    [[0x20, 0x01, 0x0d, 0xb8], 32], // documentation
    [[0x20, 0x02], 16], // 6to4: can tunnel to any IPv4 address
  ];
  return !blocked.some(([net, bits]) => prefix(b, net, bits));
}
