// Broadcasting to an EVM network: a real Ethereum node (ganache, in this process, on loopback) is
// the network of RPC_URLS. @turnkey/sdk-server's ethSendTransaction has kmas fill the nonce, gas
// and fees from the node, sign on the wasm core and send; pollTransactionStatus follows it to
// INCLUDED, and the node itself says who sent what. eth_send_raw_transaction, get_nonces,
// reverted and refused transactions, a restart between signing and sending, and bad input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import ganache from 'ganache';
import { verifyTurnkeyWebhookSignature } from '@turnkey/crypto';
import { formatEther, keccak256, parseTransaction, serializeTransaction, type Hex } from 'viem';
import { startTestServer, submitBody, uniqueName, allActivities, sdkClient, rawRequest, newP256Key, type TestServer } from '../server/harness.js';
import { checkError, expectFieldViolation, SUBMIT, QUERY } from '../server/checks.js';

// a chain id of the swagger's caip2 list (Sepolia's), so the stored intents validate against it
const CHAIN = 'eip155:11155111';
const DOWN = 'eip155:84532'; // configured, but its node does not answer
let node: { listen(port: number, host: string): Promise<void>; address(): unknown; close(): Promise<void> };
let rpcUrl: string;
let ts: TestServer;
let from: string; // a kmas wallet account holding 10 ETH on the node
let funder: string; // one of the node's own unlocked accounts
const RECIPIENT = '0x000000000000000000000000000000000000bEEF';

function serverOpts(): any {
  return { rpcUrls: [`${CHAIN}=${rpcUrl}`, `${DOWN}=http://127.0.0.1:1`], rpcPollMs: 50, rpcTimeoutMs: 2000 };
}

async function rpc<T = any>(method: string, params: unknown[] = []): Promise<T> {
  const r = await fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }) });
  const j = await r.json() as { result?: T; error?: { message: string } };
  if (j.error) throw new Error(j.error.message);
  return j.result as T;
}

/**
 * A loopback relay to the node: `intercept` sees each request body first and answers it itself
 * (true), or lets it through (false).
 */
async function startRelay(intercept: (body: string, res: http.ServerResponse) => boolean): Promise<{ url: string; close(): Promise<void> }> {
  const relay = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      if (intercept(body, res)) return;
      fetch(rpcUrl, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => {
        res.writeHead(r.status, { 'content-type': 'application/json' }).end(await r.text());
      }, () => res.writeHead(502).end());
    });
  });
  await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(relay.address() as { port: number }).port}`,
    close: () => new Promise<void>((resolve) => { relay.closeAllConnections(); relay.close(() => resolve()); }),
  };
}

async function fund(address: string, wei: bigint): Promise<void> {
  const hash = await rpc<string>('eth_sendTransaction', [{ from: funder, to: address, value: `0x${wei.toString(16)}` }]);
  expect((await rpc('eth_getTransactionReceipt', [hash])).status).toBe('0x1');
}

/** The address with the case of its first letter flipped: a wrong EIP-55 checksum. */
function badChecksum(address: string): string {
  const i = address.slice(2).search(/[a-fA-F]/) + 2;
  const c = address[i]!;
  return address.slice(0, i) + (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) + address.slice(i + 1);
}

async function newAccount(name: string): Promise<string> {
  const w: any = await ts.sdk.createWallet({ walletName: uniqueName(name), accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] });
  return w.addresses[0];
}

async function statusOf(t: TestServer, id: string): Promise<any> {
  return t.sdk.getSendTransactionStatus({ sendTransactionStatusId: id } as any);
}

/** Polls get_send_transaction_status until the status is one of `want` (or fails the test after 10 s). */
async function until(t: TestServer, id: string, want: string[]): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const s = await statusOf(t, id);
    if (want.includes(s.txStatus)) return s;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`transaction ${id} never reached ${want.join('/')}`);
}

beforeAll(async () => {
  node = ganache.server({ logging: { quiet: true }, chain: { chainId: 11155111 }, wallet: { deterministic: true, totalAccounts: 2 } } as any);
  await node.listen(0, '127.0.0.1');
  rpcUrl = `http://127.0.0.1:${(node.address() as { port: number }).port}`;
  ts = await startTestServer(serverOpts());
  [funder] = await rpc<string[]>('eth_accounts');
  from = await newAccount('sender');
  await fund(from, 10n * 10n ** 18n);
}, 60_000);
afterAll(async () => { await ts?.stop(); await node?.close(); });

describe('eth_send_transaction', () => {
  it('fills nonce, gas and fees from the node, signs, sends; the node mines it from the kmas account', async () => {
    const before = BigInt(await rpc<string>('eth_getBalance', [RECIPIENT, 'latest']));
    const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '1234567890', data: '0x' }] } as any);
    expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.activity.type).toBe('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2');
    const id = r.sendTransactionStatusId as string;
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const done: any = await (ts.sdk as any).pollTransactionStatus({ sendTransactionStatusId: id, pollingIntervalMs: 50, timeoutMs: 10_000 });
    expect(done.txStatus).toBe('INCLUDED');
    const hash = done.eth.txHash as Hex;
    const tx = await rpc('eth_getTransactionByHash', [hash]);
    // the node recovered the sender from kmas's signature
    expect(tx.from.toLowerCase()).toBe(from.toLowerCase());
    expect(tx.to.toLowerCase()).toBe(RECIPIENT.toLowerCase());
    expect(BigInt(tx.value)).toBe(1234567890n);
    expect(tx.type).toBe('0x2');
    expect(BigInt(tx.nonce)).toBe(0n);
    expect(BigInt(await rpc<string>('eth_getBalance', [RECIPIENT, 'latest'])) - before).toBe(1234567890n);
    const receipt = await rpc('eth_getTransactionReceipt', [hash]);
    expect(receipt.status).toBe('0x1');
    expect(BigInt(tx.gas)).toBeGreaterThanOrEqual(21000n);

    // get_nonces now says 1, as the node does
    const n: any = await ts.sdk.getNonces({ address: from, caip2: CHAIN, nonce: true } as any);
    expect(n.nonce).toBe('1');
    expect(BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']))).toBe(1n);
  });

  it('takes the caller\'s nonce, gas limit and fees as given', async () => {
    const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, nonce: '1', gasLimit: '30000', maxFeePerGas: '5000000000', maxPriorityFeePerGas: '1000000000', calls: [{ to: RECIPIENT, value: '1', data: '0x' }] } as any);
    const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
    expect(done.txStatus).toBe('INCLUDED');
    const tx = await rpc('eth_getTransactionByHash', [done.eth.txHash]);
    expect([BigInt(tx.nonce), BigInt(tx.gas), BigInt(tx.maxFeePerGas), BigInt(tx.maxPriorityFeePerGas)]).toEqual([1n, 30000n, 5000000000n, 1000000000n]);
  });

  it('overlapping sends from one account get consecutive nonces and are all mined', async () => {
    const first = BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']));
    const sent: any[] = await Promise.all([1, 2, 3].map((v) => ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: String(v), data: '0x' }] } as any)));
    const done = await Promise.all(sent.map((r) => until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED'])));
    expect(done.map((d) => d.txStatus)).toEqual(['INCLUDED', 'INCLUDED', 'INCLUDED']);
    const nonces = await Promise.all(done.map(async (d) => BigInt((await rpc('eth_getTransactionByHash', [d.eth.txHash])).nonce)));
    expect(nonces.sort((a, b) => Number(a - b))).toEqual([first, first + 1n, first + 2n]);
  });

  it('a call that would revert is refused (400 naming calls[0], nothing stored); sent with a gas limit it is FAILED once mined', async () => {
    // a contract whose code always reverts (PUSH1 0 PUSH1 0 REVERT)
    const deploy = await rpc<string>('eth_sendTransaction', [{ from: funder, data: '0x6005600c60003960056000f360006000fd', gas: '0x30000' }]);
    const contract = (await rpc('eth_getTransactionReceipt', [deploy])).contractAddress as string;
    const count = (await allActivities(ts)).length;
    const body = submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, { from, caip2: CHAIN, calls: [{ to: contract, value: '0', data: '0x12345678' }] });
    const refused = await ts.raw(SUBMIT('eth_send_transaction'), body);
    checkError(refused, 400, 'reverting call');
    expectFieldViolation(refused, 'calls[0]');
    expect((await allActivities(ts)).length).toBe(count);

    const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, gasLimit: '50000', calls: [{ to: contract, value: '0', data: '0x12345678' }] } as any);
    const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
    expect(done.txStatus).toBe('FAILED');
    expect(done.error.message).toMatch(/reverted/);
    expect(done.txError).toBe(done.error.message);
    expect((await rpc('eth_getTransactionReceipt', [done.eth.txHash])).status).toBe('0x0');
  });

  it('a transaction the node refuses (no funds to pay its gas) is FAILED with the node\'s reason', async () => {
    const empty = await newAccount('empty');
    const r: any = await ts.sdk.ethSendTransaction({ from: empty, caip2: CHAIN, gasLimit: '21000', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000', calls: [{ to: RECIPIENT, value: '1', data: '0x' }] } as any);
    const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
    expect(done.txStatus).toBe('FAILED');
    expect(done.error.message).toMatch(/refused.*(insufficient|funds)/i);
    expect(await rpc('eth_getTransactionByHash', [done.eth.txHash])).toBeNull();
  });

  it('a transaction signed while its node refuses connections is sent by the server after a restart', async () => {
    // A relay that answers everything but eth_sendRawTransaction (HTTP 503): the first server
    // fills and signs the transaction, but cannot send it.
    const relay = await startRelay((body, res) => {
      if (!body.includes('eth_sendRawTransaction')) return false;
      res.writeHead(503).end('down');
      return true;
    });
    const dataDir = ts.dataDir;
    await ts.stop(true);
    const first = await startTestServer({ ...serverOpts(), rpcUrls: [`${CHAIN}=${relay.url}`], dataDir });
    const nonce = BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']));
    const r: any = await first.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '7', data: '0x' }] } as any);
    await new Promise((res) => setTimeout(res, 300)); // several send attempts, all refused
    const pending = await statusOf(first, r.sendTransactionStatusId);
    expect(pending.txStatus).toBe('INITIALIZED');
    expect(await rpc('eth_getTransactionByHash', [pending.eth.txHash])).toBeNull();
    await first.stop(true);
    await relay.close();

    ts = await startTestServer({ ...serverOpts(), dataDir });
    const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
    expect(done.txStatus).toBe('INCLUDED');
    expect(done.eth.txHash).toBe(pending.eth.txHash);
    const tx = await rpc('eth_getTransactionByHash', [done.eth.txHash]);
    expect(BigInt(tx.nonce)).toBe(nonce);
    expect(tx.from.toLowerCase()).toBe(from.toLowerCase());
  });

  it('a send that reached the node but timed out is not taken for a refusal when sent again: INCLUDED, once', async () => {
    // With the node's miner stopped, the relay passes the first eth_sendRawTransaction on to the
    // node (it waits in its pool) and never answers: kmas times out and sends it again, which
    // ganache refuses ("transaction underpriced", its word for a repeat of a pending transaction).
    // The node has it: kmas must follow it, not call it FAILED.
    let sends = 0;
    const relay = await startRelay((body) => {
      if (!body.includes('eth_sendRawTransaction') || sends++ > 0) return false;
      void rpc('eth_sendRawTransaction', [JSON.parse(body).params[0]]);
      return true; // no answer
    });
    const dataDir = ts.dataDir;
    await ts.stop(true);
    ts = await startTestServer({ ...serverOpts(), rpcTimeoutMs: 300, rpcUrls: [`${CHAIN}=${relay.url}`], dataDir });
    await rpc('miner_stop');
    try {
      const nonce = BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']));
      const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '9', data: '0x' }] } as any);
      const sent = await until(ts, r.sendTransactionStatusId, ['BROADCASTING', 'INCLUDED', 'FAILED']);
      expect(sends).toBeGreaterThanOrEqual(2); // it was sent again
      expect(sent.txStatus).toBe('BROADCASTING');
      expect((await rpc('eth_getTransactionByHash', [sent.eth.txHash])).blockNumber).toBeNull(); // pending
      await rpc('miner_start');
      const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
      expect(done.txStatus).toBe('INCLUDED');
      const tx = await rpc('eth_getTransactionByHash', [done.eth.txHash]);
      expect(BigInt(tx.nonce)).toBe(nonce);
      expect(BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending']))).toBe(nonce + 1n);
    } finally {
      await rpc('miner_start');
      await ts.stop(true);
      await relay.close();
      ts = await startTestServer({ ...serverOpts(), dataDir });
    }
  });

  it('a node that answers the receipt lookups with an error for a while (rate limited) is asked again every RPC_POLL_MS: INCLUDED soon after it answers', async () => {
    // The relay answers the first eth_getTransactionReceipt calls with a JSON-RPC error, as a
    // rate-limited provider does (-32005), then lets them through. The RPC timeout is long, so a
    // look put off by the row's lease (3 × RPC_TIMEOUT_MS + 1 s) instead of RPC_POLL_MS shows.
    let refused = 0;
    const relay = await startRelay((body, res) => {
      if (!body.includes('eth_getTransactionReceipt') || refused >= 3) return false;
      refused++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, error: { code: -32005, message: 'limit exceeded' } }));
      return true;
    });
    const dataDir = ts.dataDir;
    await ts.stop(true);
    ts = await startTestServer({ ...serverOpts(), rpcTimeoutMs: 5000, rpcUrls: [`${CHAIN}=${relay.url}`], dataDir });
    try {
      const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '11', data: '0x' }] } as any);
      const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
      expect(refused).toBe(3);
      expect(done.txStatus).toBe('INCLUDED');
      expect((await rpc('eth_getTransactionReceipt', [done.eth.txHash])).status).toBe('0x1');
    } finally {
      await ts.stop(true);
      await relay.close();
      ts = await startTestServer({ ...serverOpts(), dataDir });
    }
  });

  // guards: a rate-limited provider's "not now" to the send itself is tried again, not taken as the network refusing the transaction
  it('a node that answers the send with -32005 (limit exceeded) for a while: the send is tried again and the transaction is INCLUDED, not FAILED', async () => {
    let refused = 0;
    const relay = await startRelay((body, res) => {
      if (!body.includes('eth_sendRawTransaction') || refused >= 2) return false;
      refused++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: JSON.parse(body).id, error: { code: -32005, message: 'limit exceeded' } }));
      return true;
    });
    const dataDir = ts.dataDir;
    await ts.stop(true);
    ts = await startTestServer({ ...serverOpts(), rpcUrls: [`${CHAIN}=${relay.url}`], dataDir });
    try {
      const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '12', data: '0x' }] } as any);
      const done = await until(ts, r.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
      expect(refused).toBe(2);
      expect(done.txStatus, JSON.stringify(done)).toBe('INCLUDED');
      expect((await rpc('eth_getTransactionReceipt', [done.eth.txHash])).status).toBe('0x1');
    } finally {
      await ts.stop(true);
      await relay.close();
      ts = await startTestServer({ ...serverOpts(), dataDir });
    }
  });

  // guards: a refused send whose status lookups fail is not made again at every lease (it had no limit): once, then FAILED with the node's reason when the lookups answer
  it('a send the node refuses while every status lookup fails is made once, not again at each look; FAILED with the node\'s reason once the lookups answer', async () => {
    // The relay refuses every eth_sendRawTransaction (as a node does a transaction it will not
    // take) and answers the receipt and transaction lookups with HTTP 503 until `lookupsDown` is
    // cleared. RPC_TIMEOUT_MS=100: a row's lease is 3 × 100 ms + 1 s, so a send repeated each
    // time its lease ended would pass its 20 tries within the 21 looks waited for below.
    let sends = 0;
    let lookups = 0;
    let lookupsDown = true;
    const relay = await startRelay((body, res) => {
      const call = JSON.parse(body);
      const answer = (member: object) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: call.id, ...member }));
      if (call.method === 'eth_chainId') { answer({ result: '0xaa36a7' }); return true; }
      if (call.method === 'eth_sendRawTransaction') { sends++; answer({ error: { code: -32000, message: 'insufficient funds for gas * price + value' } }); return true; }
      if (call.method !== 'eth_getTransactionReceipt' && call.method !== 'eth_getTransactionByHash') return false;
      if (call.method === 'eth_getTransactionReceipt') lookups++;
      if (!lookupsDown) return false;
      res.writeHead(503).end('busy');
      return true;
    });
    const dataDir = ts.dataDir;
    await ts.stop(true);
    ts = await startTestServer({ ...serverOpts(), rpcTimeoutMs: 100, rpcUrls: [`${CHAIN}=${relay.url}`], dataDir });
    try {
      // nonce, gas and fees given: the only call before the transaction is the chain check, which
      // a loaded machine may not answer within 100 ms (a 503 that stores nothing): asked again
      // then, past the recording proxy (which takes any 5xx for a failure of the test)
      const direct = sdkClient(ts.directUrl, ts.rootKey, ts.orgId);
      let r: any;
      for (let i = 0; r === undefined; i++) {
        r = await direct.ethSendTransaction({ from, caip2: CHAIN, nonce: '0', gasLimit: '21000', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000', calls: [{ to: RECIPIENT, value: '13', data: '0x' }] } as any)
          .catch((e: unknown) => { if (i >= 4 || !String(e).includes('RPC_UNAVAILABLE')) throw e; });
      }
      const t0 = Date.now();
      while (lookups < 21 && Date.now() - t0 < 45_000) await new Promise((res) => setTimeout(res, 50));
      expect(lookups, 'the receipt was looked for again and again').toBeGreaterThanOrEqual(21);
      expect(sends, 'sends of the refused transaction').toBe(1);
      const pending = await statusOf(ts, r.sendTransactionStatusId);
      expect(pending.txStatus).toBe('INITIALIZED');
      expect(pending.txError).toBeUndefined();
      lookupsDown = false;
      const done = await until(ts, r.sendTransactionStatusId, ['BROADCASTING', 'INCLUDED', 'FAILED']);
      expect(done.txStatus).toBe('FAILED');
      expect(done.error.message).toMatch(/refused.*insufficient funds/);
      expect(sends).toBe(1);
      expect(await rpc('eth_getTransactionByHash', [done.eth.txHash])).toBeNull();
    } finally {
      await ts.stop(true);
      await relay.close();
      ts = await startTestServer({ ...serverOpts(), dataDir });
    }
  }, 60_000);

  it('refuses what kmas cannot send, with a 400 naming the field, and stores nothing', async () => {
    const pk: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('k'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
    const ed: any = await ts.sdk.createWallet({ walletName: uniqueName('sol'), accounts: [{ curve: 'CURVE_ED25519', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/501'/0'/0'", addressFormat: 'ADDRESS_FORMAT_SOLANA' }] });
    const call = { to: RECIPIENT, value: '1', data: '0x' };
    const count = (await allActivities(ts)).length;
    const cases: [Record<string, unknown>, string, number?][] = [
      [{ from, caip2: CHAIN, sponsor: true, calls: [call] }, 'sponsor'],
      [{ from, caip2: CHAIN, calls: [call, call] }, 'calls'],
      [{ from, caip2: CHAIN, calls: [] }, 'calls'],
      [{ from, caip2: CHAIN, calls: [{ value: '1' }] }, 'calls[0]'],
      [{ from, caip2: CHAIN, calls: [{ ...call, value: '-1' }] }, 'calls[0].value'],
      [{ from, caip2: CHAIN, calls: [{ ...call, data: 'zz' }] }, 'calls[0].data'],
      [{ from, caip2: 'eip155:1', calls: [call] }, 'caip2'],
      [{ from, caip2: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', calls: [call] }, 'caip2'],
      [{ from: pk.privateKeys[0].privateKeyId, caip2: CHAIN, calls: [call] }, 'from'],
      [{ from: '0x00000000000000000000000000000000000000aa', caip2: CHAIN, calls: [call] }, 'from', 404],
      [{ from, caip2: CHAIN, maxFeePerGas: '1', maxPriorityFeePerGas: '2', calls: [call] }, 'maxPriorityFeePerGas'],
      [{ from, caip2: CHAIN, gasStationNonce: '3', calls: [call] }, 'gasStationNonce'],
      [{ from: badChecksum(from), caip2: CHAIN, calls: [call] }, 'from'],
      [{ from, caip2: CHAIN, nonce: '9007199254740992', calls: [call] }, 'nonce'],
    ];
    for (const [params, field, status] of cases) {
      const r = await ts.raw(SUBMIT('eth_send_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, params));
      checkError(r, status ?? 400, JSON.stringify(params));
      expectFieldViolation(r, field);
    }
    // a network whose node does not answer: 503, nothing stored
    // (straight to the server: the test proxy counts every 5xx as a fault)
    const down = await rawRequest(ts.directUrl, SUBMIT('eth_send_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, { from, caip2: DOWN, calls: [call] }), { key: ts.rootKey });
    checkError(down, 503, 'unreachable node');
    expect(down.json.message).toMatch(/did not answer/);
    expect(ed.addresses[0]).toBeTruthy();
    expect((await allActivities(ts)).length).toBe(count);
  });
});

describe('who may send', () => {
  it('a non-root user no policy allows is refused (403: a send cannot wait for approvals) and nothing is stored', async () => {
    const key = newP256Key();
    await ts.sdk.createUsers({ users: [{ userName: uniqueName('clerk'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const count = (await allActivities(ts)).length;
    const nonce = await rpc<string>('eth_getTransactionCount', [from, 'pending']);
    const r = await ts.raw(SUBMIT('eth_send_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, { from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '1', data: '0x' }] }), { key });
    checkError(r, 403, 'non-root send');
    expect((await allActivities(ts)).length).toBe(count);
    expect(await rpc<string>('eth_getTransactionCount', [from, 'pending'])).toBe(nonce);
  });
});

describe('SEND_TRANSACTION_STATUS_UPDATES webhooks', () => {
  it('an endpoint subscribed to them receives BROADCASTING then INCLUDED, signed as @turnkey/crypto verifies; an ACTIVITY_UPDATES endpoint does not', async () => {
    const got: { url: string; headers: Record<string, string>; body: Buffer }[] = [];
    const receiver = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => { got.push({ url: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks) }); res.writeHead(200).end(); });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(receiver.address() as { port: number }).port}`;
    const endpoints: string[] = [];
    try {
      for (const [path, eventType] of [['/tx', 'SEND_TRANSACTION_STATUS_UPDATES'], ['/activities', 'ACTIVITY_UPDATES']]) {
        const e: any = await ts.sdk.createWebhookEndpoint({ url: `${base}${path}`, name: uniqueName(path), subscriptions: [{ eventType }] } as any);
        endpoints.push(e.endpointId);
      }
      const r: any = await ts.sdk.ethSendTransaction({ from, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '3', data: '0x' }] } as any);
      const id = r.sendTransactionStatusId as string;
      const done = await until(ts, id, ['INCLUDED', 'FAILED']);
      expect(done.txStatus).toBe('INCLUDED');
      for (let i = 0; i < 100 && got.filter((g) => g.url === '/tx').length < 2; i++) await new Promise((res) => setTimeout(res, 50));
      const jwks: any = await (await fetch(`${ts.directUrl}/public/v1/discovery/webhooks/jwks`)).json();
      const keys = jwks.keys.map((k: any) => ({ keyId: k.kid, publicKey: Buffer.from(k.x, 'base64url').toString('hex') }));
      const tx = got.filter((g) => g.url === '/tx');
      expect(tx.map((g) => JSON.parse(g.body.toString('utf8')).msg.txStatus)).toEqual(['BROADCASTING', 'INCLUDED']);
      for (const g of tx) {
        expect(g.headers['x-turnkey-event-type']).toBe('SEND_TRANSACTION_STATUS_UPDATES');
        expect(verifyTurnkeyWebhookSignature({ headers: g.headers, body: new Uint8Array(g.body), verificationKeys: keys, maxTimestampAgeMs: 60_000 }).ok).toBe(true);
        const event = JSON.parse(g.body.toString('utf8'));
        expect(event).toMatchObject({ type: 'transaction:status', organizationId: ts.orgId, msg: { sendTransactionStatusId: id, caip2: CHAIN, eth: { txHash: done.eth.txHash } } });
      }
      const included = JSON.parse(tx[1]!.body.toString('utf8')).msg;
      expect(included.blockNumber).toBe(String(BigInt((await rpc('eth_getTransactionReceipt', [done.eth.txHash])).blockNumber)));
      // the activity endpoint got the activity, never a transaction event
      const acts = got.filter((g) => g.url === '/activities');
      expect(acts.length).toBeGreaterThan(0);
      expect(acts.every((g) => g.headers['x-turnkey-event-type'] === 'ACTIVITY_UPDATES')).toBe(true);
    } finally {
      for (const endpointId of endpoints) await ts.sdk.deleteWebhookEndpoint({ endpointId } as any);
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

describe('eth.tx policies on sends', () => {
  it('a bot may send at most 1000 wei to one address: that send is mined, a larger one is refused and nothing is sent', async () => {
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('bot'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const bot = u.userIds[0] as string;
    await ts.sdk.createPolicy({
      policyName: uniqueName('small sends'), effect: 'EFFECT_ALLOW', notes: '',
      consensus: `approvers.any(user, user.id == '${bot}')`,
      condition: `activity.type == 'ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2' && eth.tx.to == '${RECIPIENT.toLowerCase()}' && eth.tx.value <= 1000 && eth.tx.chain_id == 11155111`,
    });
    const send = (value: string) => ts.raw(SUBMIT('eth_send_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, { from, caip2: CHAIN, calls: [{ to: RECIPIENT, value, data: '0x' }] }), { key });
    const ok = await send('1000');
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
    const done = await until(ts, ok.json.activity.result.ethSendTransactionResultV2.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
    expect(done.txStatus).toBe('INCLUDED');
    expect(BigInt((await rpc('eth_getTransactionByHash', [done.eth.txHash])).value)).toBe(1000n);

    const count = (await allActivities(ts)).length;
    const nonce = await rpc<string>('eth_getTransactionCount', [from, 'pending']);
    checkError(await send('1001'), 403, 'over the limit');
    expect((await allActivities(ts)).length).toBe(count);
    expect(await rpc<string>('eth_getTransactionCount', [from, 'pending'])).toBe(nonce);
  });

  it('policies read the nonce, gas and fees kmas fills in from the node, not 0 for what the request left out', async () => {
    const sender = await newAccount('filled');
    await fund(sender, 10n ** 18n);
    // one send first, so the sender's next nonce (1) is not what a missing nonce reads as
    const first: any = await ts.sdk.ethSendTransaction({ from: sender, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '1', data: '0x' }] } as any);
    expect((await until(ts, first.sendTransactionStatusId, ['INCLUDED', 'FAILED'])).txStatus).toBe('INCLUDED');
    const key = newP256Key();
    const u: any = await ts.sdk.createUsers({ users: [{ userName: uniqueName('filler'), apiKeys: [{ apiKeyName: 'k', publicKey: key.publicKey, curveType: 'API_KEY_CURVE_P256' }], authenticators: [], oauthProviders: [], userTags: [] }] } as any);
    const bot = u.userIds[0] as string;
    const send = () => ts.raw(SUBMIT('eth_send_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2', ts.orgId, { from: sender, caip2: CHAIN, calls: [{ to: RECIPIENT, value: '2', data: '0x' }] }), { key });
    const policies = new Set<string>();
    const policy = async (p: Record<string, string>): Promise<string> => {
      const { policyId } = await ts.sdk.createPolicy({ policyName: uniqueName('filled'), notes: '', ...p } as any);
      policies.add(policyId);
      return policyId;
    };
    try {
      // allowed only as signed: the second nonce, a plain transfer's 21000 gas, the node's fees
      const allow = await policy({
        effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot}')`,
        condition: "activity.type == 'ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2' && eth.tx.nonce == 1 && eth.tx.gas == 21000 && eth.tx.max_fee_per_gas > 0 && eth.tx.max_priority_fee_per_gas > 0",
      });
      const ok = await send();
      expect(ok.status, ok.text).toBe(200);
      expect(ok.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
      const done = await until(ts, ok.json.activity.result.ethSendTransactionResultV2.sendTransactionStatusId, ['INCLUDED', 'FAILED']);
      expect(done.txStatus).toBe('INCLUDED');
      const mined = await rpc('eth_getTransactionByHash', [done.eth.txHash]);
      expect([BigInt(mined.nonce), BigInt(mined.gas)]).toEqual([1n, 21000n]);
      await ts.sdk.deletePolicy({ policyId: allow });
      policies.delete(allow);

      // a DENY on the fee cap fires on the node's fee when the request names none
      await policy({ effect: 'EFFECT_ALLOW', consensus: `approvers.any(user, user.id == '${bot}')`, condition: "activity.type == 'ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2'" });
      await policy({ effect: 'EFFECT_DENY', condition: `activity.type == 'ACTIVITY_TYPE_ETH_SEND_TRANSACTION_V2' && eth.tx.max_fee_per_gas > ${BigInt(mined.maxFeePerGas) / 1000n}` });
      const count = (await allActivities(ts)).length;
      const nonce = await rpc<string>('eth_getTransactionCount', [sender, 'pending']);
      checkError(await send(), 403, 'a fee over the cap, filled in by the node');
      expect((await allActivities(ts)).length).toBe(count);
      expect(await rpc<string>('eth_getTransactionCount', [sender, 'pending'])).toBe(nonce);
    } finally {
      for (const policyId of policies) await ts.sdk.deletePolicy({ policyId });
    }
  });
});

describe('eth_send_raw_transaction and get_nonces', () => {
  it('sends a transaction kmas signed with sign_transaction; the hash is the node\'s; a replay is refused and stores nothing', async () => {
    const nonce = Number(BigInt(await rpc<string>('eth_getTransactionCount', [from, 'pending'])));
    const unsigned = serializeTransaction({ type: 'eip1559', chainId: 11155111, nonce, to: RECIPIENT, value: 5n, gas: 21000n, maxFeePerGas: 3_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n });
    const s: any = await ts.sdk.signTransaction({ signWith: from, unsignedTransaction: unsigned.slice(2), type: 'TRANSACTION_TYPE_ETHEREUM' });
    const raw = `0x${s.signedTransaction.replace(/^0x/, '')}` as Hex;
    // the installed clients have no ethSendRawTransaction yet: a stamped request as the swagger gives it
    const sent = await ts.raw(SUBMIT('eth_send_raw_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION', ts.orgId, { signedTransaction: raw, caip2: CHAIN }));
    expect(sent.status, sent.text).toBe(200);
    const r = sent.json.activity;
    expect(r.status).toBe('ACTIVITY_STATUS_COMPLETED');
    expect(r.result.ethSendRawTransactionResult.transactionHash).toBe(keccak256(raw));
    expect((await rpc('eth_getTransactionReceipt', [keccak256(raw)])).status).toBe('0x1');

    const count = (await allActivities(ts)).length;
    const replay = await ts.raw(SUBMIT('eth_send_raw_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION', ts.orgId, { signedTransaction: raw, caip2: CHAIN }));
    checkError(replay, 400, 'replayed transaction');
    expect(replay.json.message).toMatch(/refused/);
    for (const [params, field] of [
      [{ signedTransaction: unsigned, caip2: CHAIN }, 'signedTransaction'],
      [{ signedTransaction: raw, caip2: 'eip155:1' }, 'signedTransaction'],
      [{ signedTransaction: 'nothex', caip2: CHAIN }, 'signedTransaction'],
      [{ signedTransaction: raw }, 'caip2'],
    ] as [Record<string, unknown>, string][]) {
      const bad = await ts.raw(SUBMIT('eth_send_raw_transaction'), submitBody('ACTIVITY_TYPE_ETH_SEND_RAW_TRANSACTION', ts.orgId, params));
      checkError(bad, 400, JSON.stringify(params));
      expectFieldViolation(bad, field);
    }
    expect((await allActivities(ts)).length).toBe(count);
    expect(parseTransaction(raw).nonce).toBe(nonce);
  });

  it('get_nonces answers the node\'s pending nonce for any address; refuses the gas station nonce and unknown networks', async () => {
    const other: any = await ts.sdk.getNonces({ address: funder, caip2: CHAIN, nonce: true } as any);
    expect(other.nonce).toBe(String(BigInt(await rpc<string>('eth_getTransactionCount', [funder, 'pending']))));
    const gs = await ts.raw(QUERY('get_nonces'), JSON.stringify({ organizationId: ts.orgId, address: from, caip2: CHAIN, gasStationNonce: true }));
    checkError(gs, 400, 'gas station nonce');
    expectFieldViolation(gs, 'gasStationNonce');
    const unknown = await ts.raw(QUERY('get_nonces'), JSON.stringify({ organizationId: ts.orgId, address: from, caip2: 'eip155:10', nonce: true }));
    checkError(unknown, 400, 'unknown network');
    expectFieldViolation(unknown, 'caip2');
  });

  it('get_wallet_address_balances answers a wallet account\'s native balance from the node (the asset list_supported_assets names); other addresses are 404', async () => {
    const b: any = await ts.sdk.getWalletAddressBalances({ address: from.toLowerCase(), caip2: CHAIN } as any);
    // all upper case carries no checksum either
    const upper: any = await ts.sdk.getWalletAddressBalances({ address: `0x${from.slice(2).toUpperCase()}`, caip2: CHAIN } as any);
    expect(upper.balances).toEqual(b.balances);
    const wei = BigInt(await rpc<string>('eth_getBalance', [from, 'latest']));
    expect(b.balances).toEqual([{ caip19: `${CHAIN}/slip44:60`, symbol: 'ETH', name: 'Ether', balance: wei.toString(), decimals: 18, display: { crypto: formatEther(wei) } }]);
    expect(wei).toBeGreaterThan(0n);
    const pk: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: uniqueName('pk'), curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
    for (const address of [pk.privateKeys[0].addresses[0].address, funder]) {
      const r = await ts.raw(QUERY('get_wallet_address_balances'), JSON.stringify({ organizationId: ts.orgId, address, caip2: CHAIN }));
      checkError(r, 404, address);
    }
    const bad = await ts.raw(QUERY('get_wallet_address_balances'), JSON.stringify({ organizationId: ts.orgId, address: from, caip2: 'eip155:1' }));
    checkError(bad, 400, 'unconfigured network');
    expectFieldViolation(bad, 'caip2');
    // list_supported_assets names the same asset
    const assets: any = await ts.sdk.listSupportedAssets({ caip2: CHAIN } as any);
    expect(assets.assets).toEqual([{ caip19: `${CHAIN}/slip44:60`, symbol: 'ETH', name: 'Ether', decimals: 18, stable: false }]);
    const none = await ts.raw(QUERY('list_supported_assets'), JSON.stringify({ organizationId: ts.orgId, caip2: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' }));
    checkError(none, 400, 'solana');
    expectFieldViolation(none, 'caip2');
  });

  it('get_send_transaction_status of an id of another organization is 404', async () => {
    const r = await ts.raw(QUERY('get_send_transaction_status'), JSON.stringify({ organizationId: ts.orgId, sendTransactionStatusId: '00000000-0000-4000-8000-000000000000' }));
    checkError(r, 404, 'unknown id');
    const viaClient = sdkClient(ts.url, ts.rootKey, ts.orgId);
    await expect(viaClient.getSendTransactionStatus({ sendTransactionStatusId: 'nope' } as any)).rejects.toThrow();
  });
});
