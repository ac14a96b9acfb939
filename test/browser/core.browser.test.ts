// Browser proof: the same build/kmas.wasm, loaded through src/core/browser.ts (no Node API) in real
// headless Chromium, gives byte-identical results to the Node entry for the same inputs.
//
// The page is served on 127.0.0.1 by a tiny node:http server. src/core/{browser,api}.ts are
// transpiled file by file with TypeScript (no bundler, no shims): a Node-only import in them would
// fail to resolve in the browser and fail this test. Chromium is Debian's /usr/bin/chromium driven
// by playwright-core; if it is missing the test says so loudly and is skipped.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import type { Page } from 'playwright-core';
import { HAVE_CHROMIUM, launchChromium, missingChromium, type Browser } from './chromium.js';
import { core } from '../../src/core/node.js';

const SKIPPED = HAVE_CHROMIUM ? '' : missingChromium('the browser proof of the wasm core (`npm run test:browser`)');

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WASM = join(ROOT, 'build', 'kmas.wasm');

function transpile(rel: string): string {
  const src = readFileSync(join(ROOT, rel), 'utf8');
  return ts.transpileModule(src, {
    compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, sourceMap: false },
    fileName: rel,
  }).outputText;
}

const PAGE = `<!doctype html><meta charset="utf-8"><title>kmas core browser proof</title><body>kmas</body>`;

function serve(): Promise<{ server: Server; url: string }> {
  const files: Record<string, { type: string; body: () => Buffer | string }> = {
    '/': { type: 'text/html; charset=utf-8', body: () => PAGE },
    '/favicon.ico': { type: 'image/x-icon', body: () => '' },
    '/kmas.wasm': { type: 'application/wasm', body: () => readFileSync(WASM) },
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    // /core/<name>.js → src/core/<name>.ts, transpiled on request (whatever browser.ts imports)
    const m = /^\/core\/([A-Za-z0-9_-]+)\.js$/.exec(path);
    const f = m && existsSync(join(ROOT, 'src', 'core', m[1] + '.ts'))
      ? { type: 'text/javascript; charset=utf-8', body: () => transpile(`src/core/${m[1]}.ts`) }
      : files[path];
    if (!f) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: ' + req.url);
      return;
    }
    try {
      const body = f.body();
      res.writeHead(200, { 'content-type': f.type, 'cache-control': 'no-store' }).end(body);
    } catch (e) {
      res.writeHead(500, { 'content-type': 'text/plain' }).end(String(e));
    }
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      resolve({ server, url: `http://127.0.0.1:${port}/` });
    });
  });
}

// ---- deterministic inputs (hex), identical for both sides ---------------------------------------
function seeded(seed: number) {
  let s = seed >>> 0;
  return (n: number): string => {
    let out = '';
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      out += ((s >>> 24) & 0xff).toString(16).padStart(2, '0');
    }
    return out;
  };
}
const N_ORDER = {
  secp256k1: 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
  p256: 0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551n,
};
function inputs(curve: 'secp256k1' | 'p256', seed: number, count: number) {
  const r = seeded(seed);
  const key = () => {
    for (;;) {
      const k = r(32);
      const x = BigInt('0x' + k);
      if (x > 0n && x < N_ORDER[curve]) return k;
    }
  };
  return {
    keys: Array.from({ length: count }, key),
    digests: Array.from({ length: count }, () => r(32)),
    entropy: Array.from({ length: count }, () => r(32)),
    batchKey: key(),
    batchDigests: Array.from({ length: 257 }, () => r(32)),
    batchKeys: Array.from({ length: 257 }, key),
  };
}
type Inputs = ReturnType<typeof inputs>;

const toBytes = (h: string) => new Uint8Array(Buffer.from(h, 'hex'));
const toHex = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Everything computed with a Core, as plain JSON. The same function body runs in the browser. */
const COMPUTE = `
async function compute(core, all) {
  const toBytes = (h) => { const a = new Uint8Array(h.length / 2); for (let i = 0; i < a.length; i++) a[i] = parseInt(h.substr(i * 2, 2), 16); return a; };
  const toHex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  const out = {};
  for (const curve of ['secp256k1', 'p256']) {
    const cc = core[curve];
    const inp = all[curve];
    const rows = [];
    for (let i = 0; i < inp.keys.length; i++) {
      const k = toBytes(inp.keys[i]);
      const d = toBytes(inp.digests[i]);
      const s = cc.sign(d, k);
      const raw = cc.sign(d, k, { lowS: false });
      const ent = cc.sign(d, k, { extraEntropy: toBytes(inp.entropy[i]) });
      const pubC = cc.getPublicKey(k);
      const pubU = cc.getPublicKey(k, false);
      const other = toBytes(inp.keys[(i + 1) % inp.keys.length]);
      rows.push({
        sig: toHex(s.signature), rec: s.recovery, raw: toHex(raw.signature), rawRec: raw.recovery,
        ent: toHex(ent.signature), pubC: toHex(pubC), pubU: toHex(pubU),
        ecdh: toHex(cc.ecdh(other, pubC)),
        verify: cc.verify(s.signature, d, pubU), verifyBad: cc.verify(s.signature, toBytes(inp.digests[(i + 1) % inp.keys.length]), pubU),
        recovered: toHex(cc.recoverPublicKey(d, s.signature, s.recovery)),
      });
    }
    const b1 = cc.signBatch(inp.batchDigests.map(toBytes), toBytes(inp.batchKey));
    const b2 = cc.signBatch(inp.batchDigests.map(toBytes), inp.batchKeys.map(toBytes));
    let err = null;
    try { cc.sign(toBytes(inp.digests[0]), new Uint8Array(32)); } catch (e) { err = { name: e.name, code: e.code }; }
    out[curve] = {
      rows,
      batchOneKey: b1.map((x) => toHex(x.signature) + ':' + x.recovery),
      batchKeyPerDigest: b2.map((x) => toHex(x.signature) + ':' + x.recovery),
      zeroKeyError: err,
    };
  }
  const msg = new TextEncoder().encode('kmas browser proof '.repeat(9));
  out.sha256 = toHex(core.sha256(msg));
  out.hmac = toHex(core.hmacSha256(msg.subarray(0, 70), msg));
  return out;
}`;

describe.skipIf(!HAVE_CHROMIUM)('wasm core in headless Chromium equals Node', () => {
  let server: Server;
  let url: string;
  let browserSession: Browser;
  let page: Page;
  const all = { secp256k1: inputs('secp256k1', 1, 40), p256: inputs('p256', 2, 40) } as Record<'secp256k1' | 'p256', Inputs>;

  beforeAll(async () => {
    ({ server, url } = await serve());
    browserSession = await launchChromium();
    page = browserSession.page;
    await page.goto(url);
  }, 120_000);

  afterAll(async () => {
    await browserSession?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  });

  it('runs in a real browser that has no Node globals', async () => {
    const env = await page.evaluate(() => ({
      ua: navigator.userAgent,
      hasProcess: typeof (globalThis as any).process !== 'undefined',
      hasRequire: typeof (globalThis as any).require !== 'undefined',
      hasBuffer: typeof (globalThis as any).Buffer !== 'undefined',
    }));
    expect(env.ua).toMatch(/Chrome\//);
    expect(env).toMatchObject({ hasProcess: false, hasRequire: false, hasBuffer: false });
  });

  it('signatures, recovery ids, public keys, ECDH, verify, recovery, batches and hashes are identical', async () => {
    // passed as a string so that vitest's transform never touches the code the page runs
    const script = `(async () => {
      const { loadCore } = await import('/core/browser.js');
      const c = await loadCore(new URL('/kmas.wasm', location.href));
      ${COMPUTE}
      return compute(c, ${JSON.stringify(all)});
    })()`;
    const browser = await page.evaluate(script).catch((e: Error) => {
      throw new Error(`${e.message}\nbrowser console:\n${browserSession.console.join('\n')}`);
    }) as any;
    const compute = new Function(`${COMPUTE}; return compute;`)();
    const node = await compute(core, all);

    // sanity: the run did real work and the shapes are what we expect
    expect(browser.secp256k1.rows).toHaveLength(40);
    expect(browser.p256.rows).toHaveLength(40);
    expect(browser.secp256k1.batchOneKey).toHaveLength(257);
    expect(browser.p256.batchKeyPerDigest).toHaveLength(257);
    expect(browser.secp256k1.rows[0].verify).toBe(true);
    expect(browser.secp256k1.rows[0].verifyBad).toBe(false);
    expect(browser.p256.zeroKeyError).toEqual({ name: 'CoreError', code: 'INVALID_PRIVATE_KEY' });

    expect(browser).toEqual(node);

    // and the batch entries equal the singles (in the browser's own output)
    for (const curve of ['secp256k1', 'p256'] as const) {
      const inp = all[curve];
      const single = core[curve].sign(toBytes(inp.batchDigests[256]), toBytes(inp.batchKey));
      expect(browser[curve].batchOneKey[256]).toBe(toHex(single.signature) + ':' + single.recovery);
    }
    expect(browser.sha256).toBe(toHex(core.sha256(new TextEncoder().encode('kmas browser proof '.repeat(9)))));
  }, 120_000);

  it('loadCore also accepts a fetch Response and raw bytes', async () => {
    const got = await page.evaluate(`(async () => {
      const { loadCore } = await import('/core/browser.js');
      const fromResponse = await loadCore(await fetch('/kmas.wasm'));
      const bytes = await (await fetch('/kmas.wasm')).arrayBuffer();
      const fromBytes = await loadCore(new Uint8Array(bytes));
      const k = new Uint8Array(32);
      k[31] = 1;
      const h = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
      return [h(fromResponse.secp256k1.getPublicKey(k)), h(fromBytes.p256.getPublicKey(k))];
    })()`);
    const k = new Uint8Array(32);
    k[31] = 1;
    expect(got).toEqual([toHex(core.secp256k1.getPublicKey(k)), toHex(core.p256.getPublicKey(k))]);
  });
});

if (!HAVE_CHROMIUM) it.skip(SKIPPED, () => undefined); // visible in the report as skipped, never as passed
