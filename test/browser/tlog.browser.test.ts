// Browser proof for the log verifier: src/tlog/{verify,merkle,note,entry}.ts, transpiled file by file
// with TypeScript (no bundler, no shims) and loaded in real headless Chromium with an import map for
// @noble / @scure (served from node_modules as they are), verify a signed checkpoint and its
// entries exactly as Node does: an honest log verifies, an altered entry and a forged checkpoint
// are refused with the same findings. A Node-only import in those files would fail to resolve here.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { ed25519 } from '@noble/curves/ed25519.js';
import { base64 } from '@scure/base';
import { HAVE_CHROMIUM, launchChromium, missingChromium, type Browser } from './chromium.js';
import { entryBytes, entryOf } from '../../src/tlog/entry.js';
import { leafHash, rootOf } from '../../src/tlog/merkle.js';
import { parseVerifierKey, signCheckpoint, verifierKey } from '../../src/tlog/note.js';
import { verifyEntries, type ExportedEntry } from '../../src/tlog/verify.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const NM = join(ROOT, 'node_modules');
const IMPORTS = { imports: { '@noble/hashes/': '/nm/@noble/hashes/', '@noble/curves/': '/nm/@noble/curves/', '@scure/base': '/nm/@scure/base/index.js' } };
const PAGE = `<!doctype html><meta charset="utf-8"><script type="importmap">${JSON.stringify(IMPORTS)}</script><title>kmas log verifier</title><body>kmas</body>`;

function serve(): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const send = (type: string, body: string | Buffer) => res.writeHead(200, { 'content-type': type, 'cache-control': 'no-store' }).end(body);
    if (path === '/') return send('text/html; charset=utf-8', PAGE);
    const m = /^\/tlog\/([a-z]+)\.js$/.exec(path);
    if (m && existsSync(join(ROOT, 'src/tlog', `${m[1]}.ts`))) {
      const src = readFileSync(join(ROOT, 'src/tlog', `${m[1]}.ts`), 'utf8');
      return send('text/javascript; charset=utf-8', ts.transpileModule(src, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } }).outputText);
    }
    if (path.startsWith('/nm/')) {
      const file = normalize(join(NM, path.slice(4)));
      if (file.startsWith(NM) && file.endsWith('.js') && existsSync(file)) return send('text/javascript; charset=utf-8', readFileSync(file));
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`not found: ${path}`);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}/` })));
}

/** A log of n entries of organization org, a checkpoint of it signed by a fresh key. */
function makeLog(n: number) {
  const sk = ed25519.utils.randomSecretKey();
  const name = 'kmas/test-root';
  const org = 'org-1';
  const bytes = Array.from({ length: n }, (_, i) => entryBytes(entryOf(i, { id: `act-${i}`, organizationId: org, type: 'ACTIVITY_TYPE_X', status: 'ACTIVITY_STATUS_COMPLETED', fingerprint: `sha256:${i}`, timestampMs: String(i), intent: { i, text: 'é\u2028' }, result: {}, votes: [] }, i, i)));
  const note = signCheckpoint({ origin: `${name}/${org}`, size: n, root: rootOf(bytes.map(leafHash)), extensions: [] }, name, sk);
  const entries: ExportedEntry[] = bytes.map((b, i) => ({ index: String(i), activityId: `act-${i}`, entry: base64.encode(b) }));
  return { note, entries, vkey: verifierKey(name, ed25519.getPublicKey(sk)) };
}

const RUN = `async (cases) => {
  const v = await import('/tlog/verify.js');
  const n = await import('/tlog/note.js');
  const out = [];
  for (const c of cases) {
    const r = await v.verifyEntries(c.entries, c.note, n.parseVerifierKey(c.vkey));
    out.push({ ok: r.ok, problem: r.problem ?? null, size: r.checkpoint ? r.checkpoint.size : null });
  }
  return out;
}`;

if (!HAVE_CHROMIUM) {
  it.skip(missingChromium('the log verifier in a browser'), () => undefined);
} else {
  describe('the log verifier in headless Chromium', () => {
    let browser: Browser;
    let site: { server: Server; url: string };
    beforeAll(async () => {
      site = await serve();
      browser = await launchChromium();
      await browser.page.goto(site.url);
    }, 120_000);
    afterAll(async () => { await browser?.close(); site?.server.close(); });

    it('gives the findings Node gives: an honest log verifies, an altered entry and a forged checkpoint do not', async () => {
      const honest = makeLog(37);
      const flip = (b64: string, at: number) => { const b = base64.decode(b64); b[at]! ^= 1; return base64.encode(b); };
      // entry 11 with one byte of its recordDigest changed (still well-formed), entry 5 with its form broken
      const digestAt = (b64: string) => Buffer.from(base64.decode(b64)).indexOf('"recordDigest":"sha256:') + 30;
      const altered = { ...honest, entries: honest.entries.map((e, i) => (i === 11 ? { ...e, entry: flip(e.entry, digestAt(e.entry)) } : e)) };
      const damaged = { ...honest, entries: honest.entries.map((e, i) => (i === 5 ? { ...e, entry: flip(e.entry, 0) } : e)) };
      const lines = honest.note.split('\n');
      const forged = { ...honest, note: [lines[0], '36', ...lines.slice(2)].join('\n') };
      const cases = [honest, altered, damaged, forged];
      const inBrowser = await browser.page.evaluate(`(${RUN})(${JSON.stringify(cases)})`) as { ok: boolean; problem: unknown; size: number | null }[];
      const inNode = [];
      for (const c of cases) {
        const r = await verifyEntries(c.entries, c.note, parseVerifierKey(c.vkey));
        inNode.push({ ok: r.ok, problem: r.problem ?? null, size: r.checkpoint ? r.checkpoint.size : null });
      }
      expect(inBrowser, browser.console.join('\n')).toEqual(inNode);
      expect(inNode.map((r) => r.ok)).toEqual([true, false, false, false]);
      expect(JSON.stringify(inNode[1]!.problem)).toMatch(/do not make the checkpoint's root/);
      expect(inNode[2]!.problem).toMatchObject({ index: 5 });
      expect(JSON.stringify(inNode[3]!.problem)).toMatch(/does not verify/);
    });
  });
}
