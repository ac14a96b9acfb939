/**
 * Where webhook deliveries may go. The addresses are the users' (any user allowed to manage an
 * organization's webhooks names them: with sub-organizations, an application's end users), and the
 * server POSTs to them from inside the operator's network. So by default a server that others can
 * reach delivers only to public addresses: not to loopback, private (RFC 1918, fc00::/7),
 * link-local (169.254.0.0/16, where clouds serve instance credentials; fe80::/10), carrier-grade
 * NAT, multicast or reserved ones, nor to IPv4 addresses of those kinds written as IPv6.
 *
 *   - `public`: only public addresses. An address given as an IP (or `localhost`) is refused when
 *     the endpoint is made; a host name is resolved at each delivery, and the delivery connects
 *     to the address that resolution checked (guardedLookup), so a name that resolves elsewhere
 *     later (DNS rebinding) is refused then.
 *   - `any`: no limit (a server only its own machine reaches, a test set-up, an operator whose
 *     receivers are internal).
 * WEBHOOK_DESTINATIONS=auto (the default) is `any` when the API listens on a loopback address
 * only (whoever can reach it can reach the machine's own services anyway) and `public` otherwise.
 */
import { BlockList, isIP } from 'node:net';
import { lookup, type LookupAddress, type LookupAllOptions, type LookupOneOptions } from 'node:dns';

export type WebhookDestinations = 'public' | 'any';

const notPublic = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['198.51.100.0', 24],
  ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) notPublic.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 128], ['::1', 128], ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 23], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) notPublic.addSubnet(net, bits, 'ipv6');

/** Whether an IP address (v4, or v6 — IPv4-mapped ones are checked as their IPv4) is public. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return false;
  return !notPublic.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

const loopback = new BlockList();
loopback.addSubnet('127.0.0.0', 8, 'ipv4');
loopback.addAddress('::1', 'ipv6');

/** The WEBHOOK_DESTINATIONS rule a server listening on `host` applies (`auto` resolved). */
export function destinationsFor(setting: 'auto' | WebhookDestinations, host: string): WebhookDestinations {
  if (setting !== 'auto') return setting;
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  const family = isIP(bare);
  return bare === 'localhost' || (family !== 0 && loopback.check(bare, family === 4 ? 'ipv4' : 'ipv6')) ? 'any' : 'public';
}

/**
 * Why `url` may not receive webhooks under `rule`, or undefined when it may (as far as can be told
 * before a delivery: an IP given in the URL, or a name of this machine; other names are checked
 * when each delivery resolves them).
 */
export function refusedDestination(url: string, rule: WebhookDestinations): string | undefined {
  if (rule === 'any') return undefined;
  let host: string;
  try { host = new URL(url).hostname.replace(/^\[|\]$/g, '').toLowerCase(); } catch { return 'is not a URL'; }
  if (host === 'localhost' || host.endsWith('.localhost')) return 'names this machine (localhost)';
  if (isIP(host) !== 0 && !isPublicAddress(host)) return `is a ${host.includes(':') ? 'IPv6' : 'IPv4'} address that is not public (loopback, private, link-local or reserved)`;
  return undefined;
}

/** The error a delivery to a non-public address fails with (code EDESTINATION). */
export class DestinationRefused extends Error {
  readonly code = 'EDESTINATION';
  constructor(readonly host: string, readonly address: string) {
    super(`${host === address ? host : `${host} resolves to ${address}, which`} is not a public address (WEBHOOK_DESTINATIONS=public)`);
  }
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A `lookup` for http.request / net.connect that resolves as dns.lookup does and fails with
 * DestinationRefused when any address the name has is not public: the connection is made to an
 * address this check saw.
 */
export function guardedLookup(hostname: string, options: LookupOneOptions | LookupAllOptions, callback: LookupCallback): void {
  lookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) { callback(err, ''); return; }
    const bad = addresses.find((a) => !isPublicAddress(a.address));
    if (bad) { callback(new DestinationRefused(hostname, bad.address), ''); return; }
    if ((options as LookupAllOptions).all) callback(null, addresses);
    else callback(null, addresses[0]!.address, addresses[0]!.family);
  });
}
