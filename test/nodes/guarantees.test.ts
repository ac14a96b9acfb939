// Issue 15, "Guarantees across nodes" 3–6, each with three kmas nodes on one PostgreSQL (the model
// is cluster.test.ts, which covers 1 and 2). What is checked comes from outside kmas: a webhook
// receiver on loopback, the .eml files of a shared MAIL_DIR, a real EVM node (ganache) behind a
// JSON-RPC proxy that counts what is sent to it, and the database itself (pg).
//   3. Outbox work (webhook deliveries, e-mails, broadcasts) is taken by one node at a time: many
//      activities through three nodes, each event delivered once; and a node killed (kill -9, a
//      `kmas serve` child) while a receiver holds its delivery open leaves the event to another
//      node once the lease it took has ended (the admitted at-least-once repeat, nothing more).
//   4. Concurrent eth_send_transaction from one address on three nodes get consecutive nonces.
//   5. One-time codes, verification tokens and import targets are used at most once: the same
//      one raced on three nodes, exactly one use succeeds and the others are refused.
//   6. No node serves a stale answer: an expired API key, a deny policy, an IP allowlist, a root
//      quorum and a webhook endpoint changed on one node hold on the very next request to another.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import ganache from 'ganache';
import { erc20Abi, keccak256, parseTransaction, recoverTransactionAddress, type Hex } from 'viem';
import { p256 } from '@noble/curves/nist.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { encryptOtpCodeToBundle, encryptPrivateKeyToBundle, encryptSecretToBundle, encryptWalletToBundle, generateP256KeyPair } from '@turnkey/crypto';
import type { RunningServer } from '../../src/server.js';
import { startNodes, type Fleet } from './nodes.js';
import { freshDatabase, missingPostgres, postgresAvailable } from '../storage/pgcluster.js';
import { freshDataDir, newP256Key, rawRequest, sdkClient, sleep, submitBody, uniqueName, type ApiKeyPair } from '../server/harness.js';
import { ensureBuilt, spawnServe, type ServeProcess } from '../server/build.js';

const available = postgresAvailable();
if (!available) missingPostgres('the multi-node guarantee tests (test/nodes/guarantees.test.ts)');

const CHAIN = 'eip155:11155111';
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';
const wellKnown = JSON.parse(readFileSync(new URL('../vectors/ethereum/well_known.json', import.meta.url), 'utf8'));
const MNEMONIC: string = wellKnown.bip44Mnemonic.mnemonic;
const KNOWN_KEY: string = wellKnown.bip44Mnemonic.accounts[0].privateKey;

interface Hit { path: string; eventId: string; body: string; at: number; remotePort: number }

/** A webhook receiver on loopback: records every request; under /hang it holds the first request of each event open (never answered), and answers the rest. */
class Receiver {
  readonly got: Hit[] = [];
  readonly #held: http.ServerResponse[] = [];
  #server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '';
      this.got.push({ path, eventId: String(req.headers['x-turnkey-event-id'] ?? ''), body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), remotePort: req.socket.remotePort ?? 0 });
      const last = this.got[this.got.length - 1]!;
      if (path.startsWith('/hang') && this.got.filter((h) => h.eventId === last.eventId).length === 1) { this.#held.push(res); return; }
      res.writeHead(200).end('ok');
    });
  });
  url = '';
  async start(): Promise<this> {
    await new Promise<void>((r) => this.#server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }
  activityIds(path: string): string[] { return this.got.filter((h) => h.path === path).map((h) => JSON.parse(h.body).id as string); }
  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((r) => this.#server.close(() => r()));
  }
}

/** Polls `cond` every 25 ms until it holds; fails naming `what` after `ms`. */
async function until(what: string, cond: () => boolean | Promise<boolean>, ms = 20_000): Promise<void> {
  const t0 = Date.now();
  while (!await cond()) {
    if (Date.now() - t0 > ms) throw new Error(`timed out after ${ms} ms waiting for: ${what}`);
    await sleep(25);
  }
}

/** How often each value occurs. */
function counts(values: string[]): Map<string, number> {
  const m = new Map<string, number>();
  for (const v of values) m.set(v, (m.get(v) ?? 0) + 1);
  return m;
}

/** The pid of the process on this machine whose TCP socket has local port `port` on 127.0.0.1 (from /proc). */
function pidOfLocalPort(port: number, pids: number[]): number | undefined {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const inodes = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try { text = readFileSync(table, 'utf8'); } catch { continue; }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1]!.endsWith(`:${hexPort}`)) inodes.add(f[9]!);
    }
  }
  for (const pid of pids) {
    let fds: string[] = [];
    try { fds = readdirSync(`/proc/${pid}/fd`); } catch { continue; }
    for (const fd of fds) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
        if (m && inodes.has(m[1]!)) return pid;
      } catch { /* closed meanwhile */ }
    }
  }
  return undefined;
}

/** A client key pair and its r||s signatures, as @turnkey/core makes them for otp_login and sign-up. */
function clientKey() {
  const sk = p256.utils.randomSecretKey();
  const publicKey = bytesToHex(p256.getPublicKey(sk, true));
  return { sk, publicKey, sign: (message: string) => bytesToHex(p256.sign(sha256(new TextEncoder().encode(message)), sk, { prehash: false })) };
}

type Outcome = { ok: true; r: any } | { ok: false; why: string };
/** A use of something single-use: ok when its activity completed; else the reason it was refused. */
function outcome(p: Promise<any>): Promise<Outcome> {
  return p.then(
    (r) => (r.activity?.status === 'ACTIVITY_STATUS_COMPLETED' ? { ok: true as const, r } : { ok: false as const, why: String(r.activity?.failure?.message ?? JSON.stringify(r.activity)) }),
    (e: Error) => ({ ok: false as const, why: e.message }));
}
/** Exactly one of the racing uses succeeded; every other one was refused, saying why (`refusal`). */
function exactlyOne(results: Outcome[], refusal: RegExp): any {
  const won = results.filter((o) => o.ok);
  expect(won, JSON.stringify(results.map((o) => (o.ok ? 'ok' : o.why)))).toHaveLength(1);
  for (const o of results) if (!o.ok) expect(o.why).toMatch(refusal);
  return (won[0] as { r: any }).r;
}

describe.runIf(available)('guarantees across three nodes on one PostgreSQL', () => {
  let fleet: Fleet | undefined;
  let nodes: RunningServer[] = [];
  let databaseUrl = '';
  let db: pg.Client;
  let rx: Receiver;
  let mailDir = '';
  let chain: { listen(port: number, host: string): Promise<void>; address(): unknown; close(): Promise<void> };
  let rpcProxy: http.Server;
  let chainUrl = '';
  /** the raw transactions sent to the EVM node (eth_sendRawTransaction), by hash */
  const rawSends: string[] = [];
  let orgId = '';
  let root: ApiKeyPair;
  let rootUserId = '';
  let signer = '';
  const sdk = (i: number, key: ApiKeyPair = root, org = orgId) => sdkClient(nodes[i]!.url, key, org);

  async function rpc<T = any>(method: string, params: unknown[] = []): Promise<T> {
    const r = await fetch(chainUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
    const j = await r.json() as { result?: T; error?: { message: string } };
    if (j.error) throw new Error(j.error.message);
    return j.result as T;
  }
  const outboxRows = async () => Number((await db.query('SELECT COUNT(*) AS n FROM webhook_deliveries')).rows[0].n);

  beforeAll(async () => {
    databaseUrl = await freshDatabase();
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    rx = await new Receiver().start();
    mailDir = mkdtempSync(join(tmpdir(), 'kmas-mail-'));
    chain = ganache.server({ logging: { quiet: true }, chain: { chainId: 11155111 }, wallet: { deterministic: true, totalAccounts: 1 } } as any);
    await chain.listen(0, '127.0.0.1');
    const ganacheUrl = `http://127.0.0.1:${(chain.address() as { port: number }).port}`;
    const forward = async (body: string) => (await fetch(ganacheUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).text();
    // In front of the EVM node: counts every transaction the nodes send, and passes them on in the
    // order of their nonces. The three nodes send theirs in any order, and a real node keeps one
    // whose nonce is ahead in its queue until the gap is filled, then mines it; ganache answers such
    // a send only when a later one comes, and may leave it queued for good.
    const expected = new Map<string, number>();
    const held = new Map<string, { body: string; done: (text: string) => void }>();
    let order = Promise.resolve();
    const sendRaw = (call: { id: unknown; params: [Hex] }, body: string): Promise<string> => new Promise((done) => {
      order = order.then(async () => {
        const tx = parseTransaction(call.params[0]);
        const from = (await recoverTransactionAddress({ serializedTransaction: call.params[0] as any })).toLowerCase();
        if (!expected.has(from)) expected.set(from, Number(BigInt(JSON.parse(await forward(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'eth_getTransactionCount', params: [from, 'pending'] }))).result)));
        const nonce = tx.nonce ?? 0;
        if (nonce > expected.get(from)!) {
          held.set(`${from}/${nonce}`, { body, done });
          return;
        }
        done(await forward(body));
        if (nonce === expected.get(from)) {
          for (let next = nonce + 1; ; next++) {
            expected.set(from, next);
            const h = held.get(`${from}/${next}`);
            if (!h) break;
            held.delete(`${from}/${next}`);
            h.done(await forward(h.body));
          }
        }
      }).catch((e: unknown) => done(JSON.stringify({ jsonrpc: '2.0', id: call.id, error: { code: -32603, message: String(e) } })));
    });
    rpcProxy = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const call = JSON.parse(body);
        if (!Array.isArray(call) && call.method === 'eth_sendRawTransaction') rawSends.push(keccak256(call.params[0] as Hex));
        const reply = !Array.isArray(call) && call.method === 'eth_sendRawTransaction' ? sendRaw(call, body) : forward(body);
        reply.then((text) => res.writeHead(200, { 'content-type': 'application/json' }).end(text), () => res.writeHead(502).end());
      });
    });
    await new Promise<void>((r) => rpcProxy.listen(0, '127.0.0.1', r));
    chainUrl = `http://127.0.0.1:${(rpcProxy.address() as AddressInfo).port}`;
    fleet = await startNodes(3, databaseUrl, {
      mailDir, webhookRetryMs: 50, outboxPollMs: 500, trustProxy: ['loopback'],
      rpcUrls: [`${CHAIN}=${chainUrl}`], rpcPollMs: 50, rpcTimeoutMs: 10_000,
    });
    ({ nodes, orgId, root, rootUserId } = fleet);
    signer = fleet.creators[0]!.bootstrap.signerPublicKey!;
  }, 90_000);
  afterAll(async () => {
    await fleet?.stop();
    await db?.end();
    await rx?.close();
    await new Promise<void>((r) => (rpcProxy ? rpcProxy.close(() => r()) : r()));
    await chain?.close();
    if (mailDir) rmSync(mailDir, { recursive: true, force: true });
  });

  it('3. webhook events and e-mails of many activities through three nodes are each delivered once', async () => {
    await sdk(0).setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rx.url}/hook` } as any);
    const tags = Array.from({ length: 30 }, (_, i) => sdk(i % 3).createUserTag({ userTagName: uniqueName(`t${i}`), userIds: [] }));
    const codes = Array.from({ length: 6 }, (_, i) => sdk(i % 3).initOtp({ otpType: 'OTP_TYPE_EMAIL', contact: `once-${i}@example.com`, appName: 'W' } as any));
    const done: any[] = await Promise.all([...tags, ...codes]);
    for (const d of done) expect(d.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const ids = done.map((d) => d.activity.id as string);
    await until('every activity announced at /hook', () => ids.every((id) => rx.activityIds('/hook').includes(id)));
    await until('the outbox empty', async () => await outboxRows() === 0);
    // each event id once, each activity once (one address)
    const events = rx.got.filter((h) => h.path === '/hook');
    expect([...counts(events.map((h) => h.eventId)).values()].every((n) => n === 1)).toBe(true);
    expect([...counts(rx.activityIds('/hook')).values()].every((n) => n === 1)).toBe(true);
    // each e-mail written once: one file per outbox row id, one per address
    const files = readdirSync(mailDir).filter((f) => f.endsWith('.eml'));
    expect(files).toHaveLength(6);
    expect(new Set(files.map((f) => f.slice(-40, -4))).size).toBe(6);
    const to = files.map((f) => /^To: (\S+)/m.exec(readFileSync(join(mailDir, f), 'utf8'))![1]!).sort();
    expect(to).toEqual(Array.from({ length: 6 }, (_, i) => `once-${i}@example.com`).sort());
  });

  it('4. six eth_send_transaction from one address over three nodes at once get consecutive nonces; each is sent once and mined', async () => {
    const w: any = await sdk(0).createWallet({ walletName: uniqueName('sender'), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } as any);
    const from = w.addresses[0] as string;
    const [funder] = await rpc<string[]>('eth_accounts');
    await rpc('eth_sendTransaction', [{ from: funder, to: from, value: `0x${(10n ** 18n).toString(16)}` }]);
    const first = BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']));
    const sent: any[] = await Promise.all([1, 2, 3, 4, 5, 6].map((v) => sdk(v % 3).ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: String(v), data: '0x' }] } as any)));
    const statuses: any[] = [];
    for (const s of sent) {
      let st: any;
      await until(`transaction ${s.sendTransactionStatusId} settled`, async () => {
        st = await sdk(2).getSendTransactionStatus({ sendTransactionStatusId: s.sendTransactionStatusId } as any);
        return st.txStatus === 'INCLUDED' || st.txStatus === 'FAILED';
      });
      statuses.push(st);
    }
    expect(statuses.map((s) => s.txStatus)).toEqual(Array(6).fill('INCLUDED'));
    const txs = await Promise.all(statuses.map((s) => rpc('eth_getTransactionByHash', [s.eth.txHash])));
    expect(txs.map((t) => BigInt(t.nonce)).sort((a, b) => Number(a - b))).toEqual([0n, 1n, 2n, 3n, 4n, 5n].map((i) => first + i));
    for (const t of txs) expect(t.blockNumber).not.toBeNull();
    expect(BigInt(await rpc<string>('eth_getTransactionCount', [from, 'latest']))).toBe(first + 6n);
    // 3 (broadcasts): each transaction went to the network exactly once
    const hashes = statuses.map((s) => s.eth.txHash.toLowerCase());
    const sends = counts(rawSends.map((h) => h.toLowerCase()));
    for (const h of hashes) expect(sends.get(h), h).toBe(1);
  });

  it('5. a one-time code (otp_auth, verify_otp) raced on three nodes is used once; the others are refused; racing wrong guesses are all counted', async () => {
    // init_otp_auth → otp_auth: one API key for the user
    const email = `${uniqueName('race')}@example.com`.toLowerCase();
    const sub: any = await sdk(0).createSubOrganization({
      subOrganizationName: uniqueName('race'), rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'alice', userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
    } as any);
    const subId = sub.subOrganizationId as string;
    const mailTo = async (to: string) => {
      let code = '';
      await until(`a code mailed to ${to}`, () => {
        for (const f of readdirSync(mailDir)) {
          const text = readFileSync(join(mailDir, f), 'utf8');
          const m = new RegExp(`^To: ${to.replace(/[.+]/g, '\\$&')}`, 'm').test(text) ? /code is ([0-9A-Z]{6,9})\b/.exec(text) : null;
          if (m) { rmSync(join(mailDir, f)); code = m[1]!; return true; }
        }
        return false;
      });
      return code;
    };
    const init: any = await sdk(1).initOtpAuth({ organizationId: subId, otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'W' } as any);
    const code = await mailTo(email);
    const keysBefore = (await sdk(2).getApiKeys({ organizationId: subId, userId: sub.rootUserIds[0] } as any) as any).apiKeys.length;
    const auth = await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).otpAuth({ organizationId: subId, otpId: init.otpId, otpCode: code, targetPublicKey: generateP256KeyPair().publicKeyUncompressed } as any))));
    exactlyOne(auth, /no such one-time code \(used, expired or never sent\)/);
    const keysAfter = (await sdk(2).getApiKeys({ organizationId: subId, userId: sub.rootUserIds[0] } as any) as any).apiKeys.length;
    expect(keysAfter - keysBefore, 'one use: one new API key').toBe(1);

    // wrong guesses racing on three nodes are all counted: after three the code is used up
    const init2: any = await sdk(1).initOtpAuth({ organizationId: subId, otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'W' } as any);
    const code2 = await mailTo(email);
    const wrong = (c: string) => c.split('').map((x) => (x === '1' ? '2' : '1')).join('');
    const guesses = await Promise.all([0, 1, 2, 0, 1, 2].map((i) => outcome(sdk(i).otpAuth({ organizationId: subId, otpId: init2.otpId, otpCode: wrong(code2), targetPublicKey: generateP256KeyPair().publicKeyUncompressed } as any))));
    const why = guesses.map((g) => (g.ok ? 'accepted' : g.why));
    expect(why.filter((w) => w === 'wrong one-time code'), JSON.stringify(why)).toHaveLength(2);
    expect(why.filter((w) => /^wrong one-time code; it is used up/.test(w)), JSON.stringify(why)).toHaveLength(1);
    expect(why.filter((w) => /no such one-time code/.test(w)), JSON.stringify(why)).toHaveLength(3);
    const late = await outcome(sdk(2).otpAuth({ organizationId: subId, otpId: init2.otpId, otpCode: code2, targetPublicKey: generateP256KeyPair().publicKeyUncompressed } as any));
    expect(late.ok ? 'accepted' : late.why, 'the right code after three wrong guesses').toMatch(/no such one-time code/);

    // init_otp → verify_otp: one verification token
    const contact = `${uniqueName('verify')}@example.com`.toLowerCase();
    const vinit: any = await sdk(0).initOtp({ otpType: 'OTP_TYPE_EMAIL', contact, appName: 'W' } as any);
    const vcode = await mailTo(contact);
    const verify = await Promise.all([0, 1, 2].map(async (i) => outcome(sdk(i).verifyOtp({ otpId: vinit.otpId, encryptedOtpBundle: await encryptOtpCodeToBundle(vcode, vinit.otpEncryptionTargetBundle, clientKey().publicKey, signer) } as any))));
    exactlyOne(verify, /no such one-time code \(used, expired or never sent\)/);
  });

  it('5. a verification token raced on three nodes (sign-up, then otp_login) is used once', async () => {
    const email = `${uniqueName('token')}@example.com`.toLowerCase();
    const key = clientKey();
    const token = async () => {
      const init: any = await sdk(0).initOtp({ otpType: 'OTP_TYPE_EMAIL', contact: email, appName: 'W' } as any);
      let code = '';
      await until('the code mail', () => {
        for (const f of readdirSync(mailDir)) {
          const text = readFileSync(join(mailDir, f), 'utf8');
          if (!text.includes(`To: ${email}`)) continue;
          code = /code is ([0-9A-Z]{6,9})\b/.exec(text)![1]!;
          rmSync(join(mailDir, f));
          return true;
        }
        return false;
      });
      const v: any = await sdk(1).verifyOtp({ otpId: init.otpId, encryptedOtpBundle: await encryptOtpCodeToBundle(code, init.otpEncryptionTargetBundle, key.publicKey, signer) } as any);
      const tok = v.verificationToken as string;
      return { tok, id: JSON.parse(Buffer.from(tok.split('.')[1]!, 'base64url').toString('utf8')).id as string };
    };
    const signup = await token();
    const message = JSON.stringify({ signupV2: { email }, tokenId: signup.id, type: 'USAGE_TYPE_SIGNUP' });
    const names = [0, 1, 2].map((i) => uniqueName(`signup${i}`));
    const signups = await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createSubOrganization({
      subOrganizationName: names[i], rootQuorumThreshold: 1,
      rootUsers: [{ userName: 'new user', userEmail: email, apiKeys: [], authenticators: [], oauthProviders: [] }],
      verificationToken: signup.tok, clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message, signature: key.sign(message) },
    } as any))));
    const won = exactlyOne(signups, /already used/);
    const verified: any = await sdk(2).getVerifiedSubOrgIds({ filterType: 'EMAIL', filterValue: email } as any);
    expect(verified.organizationIds, 'one sub-organization signed up').toEqual([won.subOrganizationId]);

    const login = await token();
    const logins = await Promise.all([0, 1, 2].map((i) => {
      const session = clientKey();
      const msg = JSON.stringify({ login: { publicKey: session.publicKey }, tokenId: login.id, type: 'USAGE_TYPE_LOGIN' });
      return outcome(sdk(i).otpLogin({
        organizationId: won.subOrganizationId, verificationToken: login.tok, publicKey: session.publicKey,
        clientSignature: { publicKey: key.publicKey, scheme: 'CLIENT_SIGNATURE_SCHEME_API_P256', message: msg, signature: key.sign(msg) },
      } as any));
    }));
    exactlyOne(logins, /already used/);
  });

  it('5. an import target raced on three nodes (import_wallet, import_private_key) is used once', async () => {
    const init: any = await sdk(0).initImportWallet({ userId: rootUserId } as any);
    const bundle = await encryptWalletToBundle({ mnemonic: MNEMONIC, importBundle: init.importBundle, userId: rootUserId, organizationId: orgId, dangerouslyOverrideSignerPublicKey: signer });
    const prefix = uniqueName('imported');
    const wallets = await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).importWallet({ userId: rootUserId, walletName: `${prefix}-${i}`, encryptedBundle: bundle, accounts: [] } as any))));
    exactlyOne(wallets, /no pending import for user .*init_import_wallet/);
    const listed: any = await sdk(2).getWallets({} as any);
    expect(listed.wallets.filter((w: any) => w.walletName.startsWith(prefix)), 'one wallet imported').toHaveLength(1);

    const pinit: any = await sdk(1).initImportPrivateKey({ userId: rootUserId } as any);
    const pbundle = await encryptPrivateKeyToBundle({ privateKey: KNOWN_KEY, keyFormat: 'HEXADECIMAL', importBundle: pinit.importBundle, userId: rootUserId, organizationId: orgId, dangerouslyOverrideSignerPublicKey: signer });
    const pprefix = uniqueName('pk');
    const keys = await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).importPrivateKey({ userId: rootUserId, privateKeyName: `${pprefix}-${i}`, encryptedBundle: pbundle, curve: 'CURVE_SECP256K1', addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] } as any))));
    exactlyOne(keys, /no pending import for user .*init_import_private_key/);
    const pks: any = await sdk(2).getPrivateKeys({} as any);
    expect(pks.privateKeys.filter((k: any) => k.privateKeyName.startsWith(pprefix)), 'one private key imported').toHaveLength(1);
  });

  // guards: what must be unique (a wallet's accounts, policy and tag names, a contract's interface) stays unique when raced on three nodes
  it('5. names and accounts that must be unique, raced on three nodes (5 rounds each): one is stored, the others are refused (never a 500)', async () => {
    const refused = /already|unique|exists|taken/i;
    // identical bodies (the same millisecond) are one activity by design: count the distinct ones stored
    const exactlyOne = (results: Outcome[], refusal: RegExp): void => {
      const ids = new Set(results.filter((o) => o.ok).map((o) => (o as { r: any }).r.activity.id));
      expect(ids.size, JSON.stringify(results.map((o) => (o.ok ? `ok ${(o as { r: any }).r.activity.id}` : o.why)))).toBe(1);
      for (const o of results) if (!o.ok) expect(o.why).toMatch(refusal);
    };
    const w: any = await sdk(0).createWallet({ walletName: uniqueName('race'), accounts: [] } as any);
    for (let round = 0; round < 5; round++) {
      const path = `m/44'/60'/0'/0/${round}`;
      const accounts = await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createWalletAccounts({ walletId: w.walletId, accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path, addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] } as any))));
      exactlyOne(accounts, refused);
      const name = uniqueName('policy');
      exactlyOne(await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createPolicy({ policyName: name, effect: 'EFFECT_DENY', condition: "activity.type == 'ACTIVITY_TYPE_NONE'", consensus: '', notes: `${i}` } as any)))), refused);
      const tag = uniqueName('tag');
      exactlyOne(await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createUserTag({ userTagName: tag, userIds: [] } as any)))), refused);
      const contract = `0x${randomBytes(20).toString('hex')}`;
      exactlyOne(await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createSmartContractInterface({ smartContractAddress: contract, smartContractInterface: JSON.stringify(erc20Abi), type: 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', label: `abi ${i}`, notes: '' } as any)))), refused);
    }
    const stored: any = await sdk(2).getWalletAccounts({ walletId: w.walletId, paginationOptions: { limit: '100' } } as any);
    expect(stored.accounts.map((a: any) => a.path).sort()).toEqual([0, 1, 2, 3, 4].map((r) => `m/44'/60'/0'/0/${r}`));

    // a secret's name, with three import targets (one per node)
    const submit = async (i: number, op: string, type: string, parameters: unknown): Promise<Outcome> => {
      const r = await rawRequest(nodes[i]!.url, `/public/v1/submit/${op}`, submitBody(type, orgId, parameters, String(Date.now() + i)), { key: root });
      return r.status === 200 && r.json.activity?.status === 'ACTIVITY_STATUS_COMPLETED' ? { ok: true, r: r.json } : { ok: false, why: String(r.json?.message ?? r.text) };
    };
    for (let round = 0; round < 3; round++) {
      const init: any = await submit(0, 'init_import_secrets', 'ACTIVITY_TYPE_INIT_IMPORT_SECRETS', { encryptionSuite: 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1', numSecrets: 3 });
      expect(init.ok, init.why).toBe(true);
      const targets: string[] = init.r.activity.result.initImportSecretsResult.enclaveTargetMessages;
      const name = uniqueName('secret');
      exactlyOne(await Promise.all([0, 1, 2].map(async (i) => {
        const sealed = await encryptSecretToBundle({ plaintext: `value ${i}`, ingressTargetBundle: targets[i]!, organizationId: orgId, dangerouslyOverrideSignerPublicKey: signer });
        return submit(i, 'import_secrets', 'ACTIVITY_TYPE_IMPORT_SECRETS', { secrets: [{ name, secretPayload: sealed.secretPayload, targetPublicKey: sealed.targetPublicKey, encryptionSuite: 'TRANSPORT_ENCRYPTION_SUITE_ENCLAVE_ENCRYPT_V1', staticProperties: [] }] });
      })), /exists/);
    }

    // the limit of webhook endpoints: one place left, three nodes take it at once
    const have = ((await sdk(0).listWebhookEndpoints({} as any)) as any).webhookEndpoints.length;
    for (let k = have; k < 19; k++) await sdk(k % 3).createWebhookEndpoint({ url: `https://hooks.example.com/${k}`, name: uniqueName('hook'), subscriptions: [] } as any);
    exactlyOne(await Promise.all([0, 1, 2].map((i) => outcome(sdk(i).createWebhookEndpoint({ url: `https://hooks.example.com/last-${i}`, name: uniqueName('last'), subscriptions: [] } as any)))), /at most 20 webhook endpoints/);
    const endpoints = ((await sdk(1).listWebhookEndpoints({} as any)) as any).webhookEndpoints;
    expect(endpoints).toHaveLength(20);
    for (const e of endpoints) if (e.url.startsWith('https://hooks.example.com/')) await sdk(2).deleteWebhookEndpoint({ endpointId: e.endpointId } as any);
  });

  it('6. an API key that expired is refused by every node on the very next request', async () => {
    const key = newP256Key();
    await sdk(0).createApiKeys({ userId: rootUserId, apiKeys: [{ apiKeyName: uniqueName('short'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256', expirationSeconds: '3' }] } as any);
    const whoami = (n: RunningServer) => rawRequest(n.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key });
    const { expires_at_ms: expiresAt } = (await db.query('SELECT expires_at_ms FROM api_keys WHERE public_key = $1', [key.publicKey])).rows[0];
    // used (and so looked up) on every node while valid
    for (const n of nodes) if (Date.now() < Number(expiresAt) - 500) expect((await whoami(n)).status).toBe(200);
    await until('the key expired', () => Date.now() > Number(expiresAt) + 10, 10_000);
    for (const n of nodes) expect((await whoami(n)).status).toBe(401);
  });

  it('6. an API key deleted on one node: its next submit on another node, which has just served one (and kept its rows), is refused and stores nothing', async () => {
    const key = newP256Key();
    const made: any = await sdk(0).createApiKeys({ userId: rootUserId, apiKeys: [{ apiKeyName: uniqueName('gone'), publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }] } as any);
    const tag = (name: string) => rawRequest(nodes[1]!.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: name, userIds: [] }), { key });
    expect((await tag(uniqueName('before'))).status).toBe(200);
    await sdk(2).deleteApiKeys({ userId: rootUserId, apiKeyIds: made.apiKeyIds } as any);
    const after = uniqueName('after');
    const refused = await tag(after);
    expect(refused.status).toBe(401);
    expect((await db.query('SELECT count(*)::int AS n FROM tags WHERE name = $1', [after])).rows[0].n).toBe(0);
  });

  it('6. a deny policy made on one node, and its removal on another, hold on the very next request to a third', async () => {
    const bot = newP256Key();
    const made: any = await sdk(0).createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'k', publicKey: bot.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const botId = made.userIds[0];
    await sdk(0).createPolicy({ policyName: uniqueName('bot tags'), effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${botId}')`, condition: "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", notes: '' } as any);
    const tag = () => rawRequest(nodes[1]!.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', orgId, { userTagName: uniqueName('bt'), userIds: [] }), { key: bot });
    const allowed = await tag();
    expect(allowed.status).toBe(200);
    expect(allowed.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const deny: any = await sdk(0).createPolicy({ policyName: uniqueName('no tags'), effect: 'EFFECT_DENY', consensus: '', condition: "activity.type == 'ACTIVITY_TYPE_CREATE_USER_TAG'", notes: '' } as any);
    const denied = await tag();
    expect(denied.status).toBe(403);
    expect(denied.json.message).toBe('policy engine denied request explicitly');
    await sdk(2).deletePolicies({ policyIds: [deny.policyId] } as any);
    expect((await tag()).json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
  });

  it('6. an IP allowlist set on one node applies on the very next request to another, and so does its removal', async () => {
    const whoamiFrom = (n: RunningServer, address: string) => rawRequest(n.url, '/public/v1/query/whoami', JSON.stringify({ organizationId: orgId }), { key: root, headers: { 'X-Forwarded-For': address } });
    for (const n of nodes) expect((await whoamiFrom(n, '198.51.100.7')).status).toBe(200);
    const set: any = await sdk(0).setIpAllowlist({ rules: [{ cidr: '127.0.0.0/8' }] } as any);
    expect(set.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    for (const n of nodes.slice(1)) {
      expect((await whoamiFrom(n, '198.51.100.7')).status).toBe(403);
      expect((await whoamiFrom(n, '127.0.0.2')).status).toBe(200);
    }
    await sdk(1).removeIpAllowlist({} as any);
    expect((await whoamiFrom(nodes[2]!, '198.51.100.7')).status).toBe(200);
    expect((await whoamiFrom(nodes[0]!, '198.51.100.7')).status).toBe(200);
  });

  it('6. a root quorum raised on one node: the next submit on another awaits consensus', async () => {
    const [a, b] = [newP256Key(), newP256Key()];
    const sub: any = await sdk(0).createSubOrganization({
      subOrganizationName: uniqueName('quorum'), rootQuorumThreshold: 1,
      rootUsers: [a, b].map((k, i) => ({ userName: `root${i}`, apiKeys: [{ apiKeyName: 'k', publicKey: k.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [] })),
    } as any);
    const subId = sub.subOrganizationId as string;
    // raw: the SDK's client would keep polling an activity that awaits consensus
    const tagOn = async (i: number) => (await rawRequest(nodes[i]!.url, '/public/v1/submit/create_user_tag', submitBody('ACTIVITY_TYPE_CREATE_USER_TAG', subId, { userTagName: uniqueName('q'), userIds: [] }), { key: a })).json;
    expect((await tagOn(1)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect((await tagOn(2)).activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const raised: any = await sdk(0, a, subId).updateRootQuorum({ threshold: 2, userIds: sub.rootUserIds } as any);
    expect(raised.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect((await tagOn(1)).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
    expect((await tagOn(2)).activity.status).toBe('ACTIVITY_STATUS_CONSENSUS_NEEDED');
  });

  it('6. a webhook endpoint moved or deleted on one node: the next activity through another is not sent to the old address', async () => {
    const made: any = await sdk(0).createWebhookEndpoint({ url: `${rx.url}/old`, name: 'ep', subscriptions: [{ eventType: 'ACTIVITY_UPDATES' }] } as any);
    const tagVia = async (i: number) => (await sdk(i).createUserTag({ userTagName: uniqueName('ep'), userIds: [] }) as any).activity.id as string;
    const first = await tagVia(1);
    await until('the activity at /old', () => rx.activityIds('/old').includes(first));
    await sdk(0).updateWebhookEndpoint({ endpointId: made.endpointId, url: `${rx.url}/new` } as any);
    const second = await tagVia(1);
    await until('the activity at /new', () => rx.activityIds('/new').includes(second));
    await sdk(2).deleteWebhookEndpoint({ endpointId: made.endpointId } as any);
    const third = await tagVia(1);
    await until('the activity announced at /hook', () => rx.activityIds('/hook').includes(third));
    await until('the outbox empty', async () => await outboxRows() === 0);
    expect(rx.activityIds('/old')).not.toContain(second);
    expect(rx.activityIds('/old')).not.toContain(third);
    expect(rx.activityIds('/new')).not.toContain(third);
  });
});

describe.runIf(available)('a node killed mid-delivery (kill -9): another node delivers once its lease ends', () => {
  const procs: ServeProcess[] = [];
  const dirs: string[] = [];
  let rx: Receiver;
  let db: pg.Client;

  beforeAll(async () => {
    const notBuilt = ensureBuilt();
    if (notBuilt) throw new Error(notBuilt);
    const databaseUrl = await freshDatabase();
    db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    rx = await new Receiver().start();
    // WEBHOOK_TIMEOUT_MS=3000: a claim is a lease of 2 × 3 s + 1 s (and the node has 3 s to be
    // killed before it gives up on the held request itself); OUTBOX_POLL_MS: how soon the others look again
    const env = { DATABASE_URL: databaseUrl, KMAS_MASTER_KEY: randomBytes(32).toString('hex'), WEBHOOK_TIMEOUT_MS: '3000', WEBHOOK_RETRY_MS: '50', OUTBOX_POLL_MS: '200' };
    // one first (it creates the root organization), then two more
    const first = freshDataDir();
    dirs.push(first);
    procs.push(await spawnServe(first, { env }));
    procs.push(...await Promise.all([0, 1].map(() => { const d = freshDataDir(); dirs.push(d); return spawnServe(d, { env }); })));
  }, 90_000);
  afterAll(async () => {
    await Promise.all(procs.map((p) => p.stop('SIGKILL')));
    await db?.end();
    await rx?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('the event a killed node was sending reaches the receiver again from a live node, after the lease, once more only', async () => {
    const rootKey: ApiKeyPair = JSON.parse(readFileSync(join(dirs[0]!, 'root-api-key.json'), 'utf8'));
    const boot = JSON.parse(readFileSync(join(dirs[0]!, 'bootstrap.json'), 'utf8'));
    // the activity that sets the address is itself the first event sent there
    const set: any = await sdkClient(procs[0]!.url, rootKey, boot.organizationId).setOrganizationFeature({ name: 'FEATURE_NAME_WEBHOOK', value: `${rx.url}/hang` } as any);
    expect(set.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    await until('the delivery held open by the receiver', () => rx.got.length === 1);
    const held = rx.got[0]!;
    expect(JSON.parse(held.body).id).toBe(set.activity.id);
    // which node is sending it (the owner of the connection's local port), and until when it holds the row
    const pids = procs.map((p) => p.child.pid!);
    const sender = pidOfLocalPort(held.remotePort, pids);
    expect(sender, 'one of the nodes holds the connection').toBeDefined();
    const { next_attempt_ms: leaseEnd } = (await db.query('SELECT next_attempt_ms FROM webhook_deliveries WHERE id = $1', [held.eventId])).rows[0];
    expect(Number(leaseEnd)).toBeGreaterThan(held.at);
    const victim = procs.find((p) => p.child.pid === sender)!;
    await victim.stop('SIGKILL');
    // the others take it up once the lease has ended (and this time the receiver answers)
    await until('the event sent again', () => rx.got.length >= 2, 20_000);
    const again = rx.got[1]!;
    expect(again.eventId).toBe(held.eventId);
    expect(again.at, 'not before the lease ended').toBeGreaterThanOrEqual(Number(leaseEnd));
    const retaker = pidOfLocalPort(again.remotePort, procs.filter((p) => p !== victim).map((p) => p.child.pid!));
    expect(retaker, 'a live node sent it').toBeDefined();
    await until('the row removed once delivered', async () => Number((await db.query('SELECT COUNT(*) AS n FROM webhook_deliveries')).rows[0].n) === 0, 15_000);
    // nothing more than the admitted repeat
    await sleep(500);
    expect(rx.got.filter((h) => h.eventId === held.eventId)).toHaveLength(2);
  });
});
