// Where a webhook may connect: https URLs without credentials whose host resolves only to public
// addresses (src/internal/address.ts isPublicAddress: no loopback, private, link-local, CGNAT,
// multicast, unspecified, metadata or IPv4-mapped forms of those). Checked when an endpoint is
// saved and again at every attempt, which connects to the very addresses checked (no rebinding).
// KILN_WEBHOOK_ALLOW_PRIVATE=1 (development, tests) allows http and any address.

import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { isPublicAddress } from '../internal/address.ts';

export class UrlRefused extends Error {}

export type Address = { address: string; family: number };

/** A syntactically acceptable endpoint URL (no network), or UrlRefused with a client-safe message. */
export function parseEndpointUrl(raw: string, allowPrivate: boolean): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlRefused('url: must be an absolute URL');
  }
  if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) throw new UrlRefused('url: must use https');
  if (url.username || url.password) throw new UrlRefused('url: must not contain credentials');
  if (url.hash) throw new UrlRefused('url: must not contain a fragment');
  return url;
}

/**
 * The addresses to connect to for `url`, all public (or, allowPrivate, whatever the resolver
 * says); UrlRefused when any is not public or the host does not resolve. A literal IP host is
 * checked as is (Node connects without a lookup).
 */
export async function vetHost(url: URL, allowPrivate: boolean): Promise<Address[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const family = isIP(host);
  if (family) {
    if (!allowPrivate && !isPublicAddress(host)) throw new UrlRefused('url: the host is not a public address');
    return [{ address: host, family }];
  }
  let addrs: Address[];
  try {
    addrs = await dnsLookup(host, { all: true, verbatim: true });
  } catch {
    throw new UrlRefused('url: the host could not be resolved');
  }
  if (!addrs.length) throw new UrlRefused('url: the host could not be resolved');
  // One private answer among public ones refuses the host: mixing them is a rebinding trick.
  if (!allowPrivate && !addrs.every((a) => isPublicAddress(a.address))) throw new UrlRefused('url: the host resolves to a non-public address');
  return addrs;
}

/** Checks an endpoint URL as it is saved (create, update). */
export async function checkEndpointUrl(raw: string, allowPrivate: boolean): Promise<string> {
  const url = parseEndpointUrl(raw, allowPrivate);
  await vetHost(url, allowPrivate);
  return url.toString();
}
