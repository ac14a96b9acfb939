// On PostgreSQL a stamped signing submit is one transaction, at most two messages: everything it
// reads (the stamp's key and user, or once read only their auth version and the organization's
// data version, which also vouches for the signing key and the webhook addresses read before; the
// request lock, the idempotency lookup, the log head) goes with its BEGIN, and its writes go with
// its COMMIT, whatever signWith names. Once the node has seen those versions and committed to the
// organization's log, such a submit is one message: its reads are checks (kmas_expect) sent with
// its writes and COMMIT (postgres.ts Predictions; the two-message form: postgres.adapter.test.ts). Counted on the wire: each extended-protocol
// message ends with one Sync (node-postgres's Connection, patched in this process, where the test
// server runs).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pg from 'pg';
import { startTestServer, type TestServer } from './harness.js';
import { onSqlite } from './teststorage.js';

type Sent = { conn: object; what: string };
const sent: Sent[] = [];
const names = new Map<string, string>();
let recording = false;
const C = (pg as unknown as { Connection: { prototype: Record<string, (...a: any[]) => unknown> } }).Connection.prototype;
const original = { parse: C.parse!, bind: C.bind!, sync: C.sync!, query: C.query! };

/** The messages of the transaction that stored an activity: each a list of statements. */
function activityMessages(): string[][] {
  const conns = new Set(sent.filter((s) => s.what.startsWith('INSERT INTO activities')).map((s) => s.conn));
  expect(conns.size).toBe(1);
  const conn = [...conns][0]!;
  const mine = sent.filter((s) => s.conn === conn).map((s) => s.what);
  const begin = mine.lastIndexOf('BEGIN', mine.findIndex((w) => w.startsWith('INSERT INTO activities')));
  const commit = mine.indexOf('COMMIT', begin);
  const messages: string[][] = [[]];
  for (const w of mine.slice(begin, mine.indexOf('SYNC', commit) + 1)) {
    if (w === 'SYNC') messages.push([]);
    else messages[messages.length - 1]!.push(w);
  }
  return messages.filter((m) => m.length > 0);
}

describe.skipIf(onSqlite)('PostgreSQL messages of one signing submit', () => {
  let ts: TestServer;
  const keys: Record<string, string> = {};
  beforeAll(async () => {
    C.parse = function (this: object, cfg: { name?: string; text: string }) { names.set(cfg.name ?? '', cfg.text); return original.parse.call(this, cfg); };
    C.bind = function (this: object, cfg: { statement?: string }) {
      if (recording) sent.push({ conn: this, what: (names.get(cfg.statement ?? '') ?? '?').replace(/\s+/g, ' ').trim() });
      return original.bind.call(this, cfg);
    };
    C.sync = function (this: object) { if (recording) sent.push({ conn: this, what: 'SYNC' }); return original.sync.call(this); };
    C.query = function (this: object, text: string) { if (recording) sent.push({ conn: this, what: text }); return original.query.call(this, text); };
    ts = await startTestServer();
    const w: any = await ts.sdk.createWallet({ walletName: 'messages', accounts: [{ curve: 'CURVE_SECP256K1', pathFormat: 'PATH_FORMAT_BIP32', path: "m/44'/60'/0'/0/0", addressFormat: 'ADDRESS_FORMAT_ETHEREUM' }] });
    const pk: any = await ts.sdk.createPrivateKeys({ privateKeys: [{ privateKeyName: 'messages', curve: 'CURVE_SECP256K1', privateKeyTags: [], addressFormats: ['ADDRESS_FORMAT_ETHEREUM'] }] } as any);
    keys['a wallet account address'] = w.addresses[0];
    keys['a private key id'] = pk.privateKeys[0].privateKeyId;
    keys['a private key address'] = pk.privateKeys[0].addresses[0].address;
  });
  afterAll(async () => {
    Object.assign(C, original);
    await ts?.stop();
  });

  for (const what of ['a wallet account address', 'a private key id', 'a private key address']) {
    it(`sign_raw_payload with ${what}: one message once the node has served the key (checks of what it read, the writes, COMMIT)`, async () => {
      const sign = async () => {
        sent.length = 0;
        recording = true;
        const r: any = await ts.sdk.signRawPayload({ signWith: keys[what]!, payload: 'ab'.repeat(32), encoding: 'PAYLOAD_ENCODING_HEXADECIMAL', hashFunction: 'HASH_FUNCTION_NO_OP' });
        recording = false;
        expect(r.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');
        return activityMessages();
      };
      // the first reads what this node has not read yet (the signing key by this name; the
      // versions, which the keys and wallets created above moved; its rows are kept by version)
      const first = await sign();
      expect(first.length).toBeLessThanOrEqual(2);
      expect(first[0]![0]).toBe('BEGIN');
      expect(first.at(-1)!.at(-1)).toBe('COMMIT');
      const messages = await sign();
      expect(messages.map((m) => m.map((s) => s.slice(0, 60))), JSON.stringify(messages, null, 1)).toHaveLength(1);
      const [only] = messages;
      expect(only![0]).toBe('BEGIN');
      expect(only!.at(-1)).toBe('COMMIT');
      expect(only!.some((s) => s.startsWith('INSERT INTO activities'))).toBe(true);
      expect(only!.some((s) => s.startsWith('WITH entry AS (INSERT INTO log_entries'))).toBe(true);
      // what the submit reads is checked, not read: the auth and data versions of the stamp's
      // scopes, that no activity has the request, the log head (with its row lock)
      expect(only!.filter((s) => s.includes('kmas_expect')).map((s) => /'(KM00\d)'/.exec(s)?.[1])).toEqual(['KM001', 'KM002', 'KM003']);
      expect(only!.some((s) => /^SELECT (scope, n|\*) FROM (auth_versions|activities|log_heads)\b/.test(s))).toBe(false);
      // the stamp's rows, the signing key and the webhook addresses have no statement of their own
      // (postgresRepos.ts StampContextCache, OrgDataCache: kept by version, and the versions are checked)
      expect(only!.some((s) => s.includes('FROM api_keys k WHERE k.public_key'))).toBe(false);
      expect(messages.flat().filter((s) => /\bFROM (private_keys|private_key_addresses|wallet_accounts|webhook_endpoints|features)\b/.test(s))).toEqual([]);
    });
  }
});
