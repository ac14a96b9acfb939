// kmas as a user gets it: `npm pack`, the tarball installed into an empty project, and then
//  - the CLI from that install: --version, init, serve answering /healthz, and the README's quick
//    start (examples/quickstart.mjs, run from another folder) signing through @turnkey/sdk-server;
//  - import('kmas'), 'kmas/core', 'kmas/core/node', 'kmas/kmas.wasm' and their TypeScript types;
//  - a web app bundled by esbuild from the installed 'kmas/core/browser' (the .wasm taken through
//    its package export), and the same entry unbundled through an import map, in headless
//    Chromium under a CSP: signatures, public keys and ECDH equal @noble/curves' in Node.
//
// The build is `npm test`'s (the tarball is packed with --ignore-scripts; the real `prepack`
// builds). The install takes the dependencies from npm's cache (--prefer-offline) and runs no
// install scripts: better-sqlite3's would download or compile its native binding, so the test
// gives it this checkout's binding of the same pinned version instead.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, sep } from 'node:path';
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { build } from 'esbuild';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { p256 } from '@noble/curves/nist.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { ensureBuilt, root, spawnServe, type ServeProcess } from '../server/build.js';
import { HAVE_CHROMIUM, launchChromium, missingChromium, type Browser } from '../browser/chromium.js';

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; version: string };
const SKIPPED = HAVE_CHROMIUM ? '' : missingChromium('the web-app test of the packed browser entry');

function run(cmd: string, args: string[], cwd: string, env: Record<string, string> = {}, timeout = 120_000) {
  const r = spawnSync(cmd, args, { cwd, env: { ...process.env, ...env }, encoding: 'utf8', timeout });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} (in ${cwd}) failed with ${r.status ?? r.signal}:\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

interface PackFile { path: string; size: number }
const packList = (stdout: string) => (JSON.parse(stdout) as { files: PackFile[]; size: number; unpackedSize: number; entryCount: number }[])[0]!;

let tmp: string;
let project: string; // the empty project the tarball is installed into
let installed: string; // project/node_modules/kmas
let tarball: string;
let packed: ReturnType<typeof packList>;

beforeAll(() => {
  const why = ensureBuilt();
  if (why) throw new Error(why);
  if (!existsSync(join(root, 'build', 'kmas.wasm'))) throw new Error('build/kmas.wasm is missing: run `npm run build` (npm test does)');
  tmp = mkdtempSync(join(tmpdir(), 'kmas-pack-'));
  packed = packList(run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], root));
  tarball = join(tmp, `${pkg.name}-${pkg.version}.tgz`);
  project = join(tmp, 'project');
  mkdirSync(project);
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'kmas-install-probe', private: true, type: 'module' }, null, 2));
  const t0 = Date.now();
  run('npm', ['install', '--prefer-offline', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error', tarball], project);
  console.log(`installed ${tarball} (${(statSync(tarball).size / 1024).toFixed(0)} kB, ${packed.entryCount} files) with its dependencies in ${Date.now() - t0} ms`);
  installed = join(project, 'node_modules', 'kmas');
  const binding = join('node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  const version = (dir: string) => JSON.parse(readFileSync(join(dir, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')).version;
  expect(version(project), 'the same better-sqlite3 as this checkout, whose binding is lent').toBe(version(root));
  mkdirSync(join(project, binding, '..'), { recursive: true });
  copyFileSync(join(root, binding), join(project, binding));
}, 240_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe('npm pack', () => {
  it('ships what runs (dist/src with types, build/kmas.wasm, bin, docs, LICENSE) and no test, source map or source', () => {
    const dry = packList(run('npm', ['pack', '--dry-run', '--ignore-scripts', '--json'], root));
    const paths = dry.files.map((f) => f.path);
    expect(paths.sort()).toEqual(packed.files.map((f) => f.path).sort());
    for (const f of ['build/kmas.wasm', 'bin/kmas.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/core/api.d.ts',
      'dist/src/core/browser.js', 'dist/src/core/node.js', 'dist/src/crypto/signworker.js', 'LICENSE', 'README.md', 'package.json']) {
      expect(paths, f).toContain(f);
    }
    // GET /openapi.json is built at run time from the swagger (and its attribution): the one source file shipped
    expect(paths).toContain('src/http/public_api.swagger.json');
    const unwanted = paths.filter((p) => !p.startsWith('src/http/public_api.swagger.json') && p !== 'src/http/ATTRIBUTION.md'
      && /(^|\/)test\/|\.test\.|\.map$|^assembly\/|^src\/|^bench\/|^dist\/bench\/|^scripts\/|^examples\//.test(p));
    expect(unwanted).toEqual([]);
    const wasm = dry.files.find((f) => f.path === 'build/kmas.wasm')!;
    expect(wasm.size).toBe(statSync(join(root, 'build', 'kmas.wasm')).size);
  });
});

describe('installed from the tarball', () => {
  const kmasBin = () => join(project, 'node_modules', '.bin', 'kmas');

  it('npx kmas --version, and kmas init makes the data directory and the root organization', () => {
    expect(run('npx', ['--no-install', 'kmas', '--version'], project)).toBe(`${pkg.version}\n`);
    const dataDir = join(tmp, 'init-data');
    const boot = JSON.parse(run(kmasBin(), ['init'], project, { DATA_DIR: dataDir, LOG_LEVEL: 'silent' }));
    expect(boot).toEqual(JSON.parse(readFileSync(join(dataDir, 'bootstrap.json'), 'utf8')));
    expect(statSync(dataDir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dataDir, 'kmas.sqlite')).mode & 0o777).toBe(0o600);
  });

  it('kmas serve answers /healthz, and the README quick start run from another folder signs through @turnkey/sdk-server', async () => {
    const dataDir = join(tmp, 'serve-data');
    let serve: ServeProcess | undefined;
    try {
      serve = await spawnServe(dataDir, { bin: kmasBin(), cwd: project });
      expect((await fetch(serve.url + '/healthz')).status).toBe(200);
      const api = await fetch(serve.url + '/openapi.json');
      expect(api.status).toBe(200);
      expect(Object.keys(((await api.json()) as { paths: object }).paths).length).toBeGreaterThan(100);
      // examples/quickstart.mjs is the README's script; its cwd here is neither kmas's folder nor the data's
      const out = JSON.parse(run(process.execPath, [join(root, 'examples', 'quickstart.mjs'), serve.url, dataDir], tmp));
      expect(out.verified).toBe(true);
      // checked again here with @noble/curves: the signature, its recovery id and the address
      const digest = createHash('sha256').update(out.message).digest();
      const sig = hexToBytes(out.signature.r + out.signature.s);
      expect(secp256k1.verify(sig, digest, hexToBytes(out.publicKey), { prehash: false })).toBe(true);
      const recovered = secp256k1.Signature.fromBytes(sig).addRecoveryBit(Number(out.signature.v)).recoverPublicKey(digest).toBytes(false);
      expect(bytesToHex(secp256k1.Point.fromBytes(recovered).toBytes(true))).toBe(out.publicKey);
      expect(`0x${bytesToHex(keccak_256(recovered.slice(1)).slice(-20))}`).toBe(out.address.toLowerCase());
      const key = JSON.parse(readFileSync(join(dataDir, 'root-api-key.json'), 'utf8'));
      expect(serve.output(), 'no private key in the log').not.toContain(key.privateKey);
    } finally {
      await serve?.stop();
    }
  }, 90_000);

  it("import('kmas') and its subpaths resolve to the installed package and work", () => {
    const script = `
      const kmas = await import('kmas');
      const { createCore, CoreError } = await import('kmas/core');
      const { core, wasmPath } = await import('kmas/core/node');
      const k = new Uint8Array(32); k[31] = 7;
      const hex = (b) => Buffer.from(b).toString('hex');
      console.log(JSON.stringify({
        server: typeof kmas.startServer, loadConfig: typeof kmas.loadConfig, createCore: typeof createCore, coreError: typeof CoreError,
        wasmPath, wasmExport: new URL(import.meta.resolve('kmas/kmas.wasm')).pathname,
        pubs: [hex(core.secp256k1.getPublicKey(k)), hex(core.p256.getPublicKey(k))],
      }));`;
    const got = JSON.parse(run(process.execPath, ['--input-type=module', '-e', script], project));
    const k = new Uint8Array(32);
    k[31] = 7;
    expect(got).toEqual({
      server: 'function', loadConfig: 'function', createCore: 'function', coreError: 'function',
      wasmPath: join(installed, 'build', 'kmas.wasm'), wasmExport: join(installed, 'build', 'kmas.wasm'),
      pubs: [bytesToHex(secp256k1.getPublicKey(k)), bytesToHex(p256.getPublicKey(k))],
    });
  });

  it('TypeScript finds the types of every entry (NodeNext and bundler resolution, strict)', () => {
    writeFileSync(join(project, 'check.ts'), [
      "import { startServer, loadConfig, type Config, type StartOptions, type RunningServer } from 'kmas';",
      "import { createCore, CoreError, type Core, type CurveName } from 'kmas/core';",
      "import { core, wasmPath } from 'kmas/core/node';",
      "import { loadCore } from 'kmas/core/browser';",
      "const opts: StartOptions = { dataDir: 'data', port: 0 };",
      "const running: Promise<RunningServer> = startServer(opts);",
      "const config: Config = loadConfig({ env: {} });",
      "const curve: CurveName = core.p256.name;",
      "const browserCore: Promise<Core> = loadCore(new URL('https://example.invalid/kmas.wasm'));",
      "const sig: Uint8Array = core.secp256k1.sign(new Uint8Array(32), new Uint8Array(32)).signature;",
      "export { running, config, curve, browserCore, sig, wasmPath, createCore, CoreError };",
      '',
    ].join('\n'));
    // a typo must fail, so a pass means the types were read (and not `any` from a missing .d.ts)
    writeFileSync(join(project, 'bad.ts'), "import { core } from 'kmas/core/node';\nexport const x: number = core.secp256k1.nosuch;\n");
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    const common = ['--noEmit', '--strict', '--skipLibCheck', '--target', 'ES2022', '--lib', 'ES2022,DOM', '--types', 'node', '--typeRoots', join(root, 'node_modules', '@types')];
    for (const resolution of [['--module', 'NodeNext', '--moduleResolution', 'NodeNext'], ['--module', 'ESNext', '--moduleResolution', 'Bundler']]) {
      const r = spawnSync(process.execPath, [tsc, ...common, ...resolution, 'check.ts', 'bad.ts'], { cwd: project, encoding: 'utf8', timeout: 60_000 });
      // exactly one error, the typo's: check.ts compiles, and no module lacks its types (TS7016)
      expect(r.stdout.trim().split('\n'), r.stdout + r.stderr).toEqual([expect.stringMatching(/^bad\.ts\(2,\d+\): error TS2339: .*'nosuch'/)]);
      expect(r.status).not.toBe(0);
    }
  }, 60_000);
});

// ---- the web app --------------------------------------------------------------------------------

/** What the pages compute: for each curve and key, signature + recovery id, public keys, ECDH, verify. */
const COMPUTE = `
function compute(core, input) {
  const hex = (b) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
  const bytes = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
  const out = {};
  for (const curve of ['secp256k1', 'p256']) {
    const c = core[curve];
    out[curve] = input[curve].map(({ key, peer, digest }) => {
      const s = c.sign(bytes(digest), bytes(key));
      const pub = c.getPublicKey(bytes(key), false);
      return {
        signature: hex(s.signature), recovery: s.recovery,
        publicKey: hex(c.getPublicKey(bytes(key))), publicKeyUncompressed: hex(pub),
        ecdh: hex(c.ecdh(bytes(key), bytes(peer))), verified: c.verify(s.signature, bytes(digest), pub),
      };
    });
  }
  return out;
}`;

/** The web app's one source file. */
const APP = `
import { loadCore } from 'kmas/core/browser';
import wasmUrl from 'kmas/kmas.wasm';
${COMPUTE}
window.kmasApp = loadCore(new URL(wasmUrl, import.meta.url)).then((core) => ({ core, readyMs: performance.now() }));
window.kmasCompute = (input) => window.kmasApp.then(({ core }) => compute(core, input));
`;

const CSP_WASM = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'";
const PAGES: Record<string, { body: string; csp?: string }> = {
  // the bundle under a CSP that allows compiling WebAssembly and nothing inline
  '/app/index.html': { body: '<!doctype html><meta charset="utf-8"><title>kmas app</title><script type="module" src="./out/main.js"></script>', csp: CSP_WASM },
  // the same without 'wasm-unsafe-eval': Chromium refuses to compile the module
  // the README's example, as it stands there
  '/app/readme.html': { body: '<!doctype html><meta charset="utf-8"><title>kmas readme</title><script type="module" src="./out/readme.js"></script>', csp: CSP_WASM },
  '/app/no-wasm-eval.html': { body: '<!doctype html><meta charset="utf-8"><title>kmas app</title><script type="module" src="./out/main.js"></script>', csp: "default-src 'self'; script-src 'self'" },
  // no bundler: the installed files served as they are, the bare name mapped by an import map,
  // and loadCore() with no argument finding kmas.wasm beside its own module
  '/plain.html': {
    body: `<!doctype html><meta charset="utf-8"><title>kmas plain</title>
<script type="importmap">{ "imports": { "kmas/core/browser": "/node_modules/kmas/dist/src/core/browser.js" } }</script>
<script type="module">
import { loadCore } from 'kmas/core/browser';
window.kmasApp = loadCore().then((core) => ({ core, readyMs: performance.now() }));
</script>`,
  },
};
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.wasm': 'application/wasm' };

/** Serves the project folder (and the pages above) on loopback. */
function serveProject(dir: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    // Chromium asks each origin for an icon on its own schedule; its 404 would land in whichever
    // test's console lines it falls (a flaky failure of the README example's once in CI)
    if (path === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    const page = PAGES[path];
    if (page) {
      res.writeHead(200, { 'content-type': TYPES['.html']!, 'cache-control': 'no-store', ...(page.csp ? { 'content-security-policy': page.csp } : {}) }).end(page.body);
      return;
    }
    const file = normalize(join(dir, path));
    if (!file.startsWith(dir + sep) || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream', 'cache-control': 'no-store' }).end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

function inputs() {
  const one = (curve: typeof secp256k1 | typeof p256) => Array.from({ length: 16 }, () => ({
    key: bytesToHex(curve.utils.randomSecretKey()),
    peer: bytesToHex(curve.getPublicKey(curve.utils.randomSecretKey(), randomBytes(1)[0]! % 2 === 0)),
    digest: bytesToHex(randomBytes(32)),
  }));
  return { secp256k1: one(secp256k1), p256: one(p256) };
}

/** The same results from @noble/curves in Node. */
function expected(input: ReturnType<typeof inputs>) {
  const out: Record<string, unknown[]> = {};
  for (const [name, curve] of [['secp256k1', secp256k1], ['p256', p256]] as const) {
    out[name] = input[name].map(({ key, peer, digest }) => {
      const rec = curve.sign(hexToBytes(digest), hexToBytes(key), { prehash: false, format: 'recovered' });
      return {
        signature: bytesToHex(rec.subarray(1)), recovery: rec[0],
        publicKey: bytesToHex(curve.getPublicKey(hexToBytes(key))), publicKeyUncompressed: bytesToHex(curve.getPublicKey(hexToBytes(key), false)),
        ecdh: bytesToHex(curve.getSharedSecret(hexToBytes(key), hexToBytes(peer)).subarray(1)), verified: true,
      };
    });
  }
  return out;
}

describe.skipIf(!HAVE_CHROMIUM)('a web app bundled by esbuild from the installed kmas/core/browser, in headless Chromium', () => {
  let web: { server: Server; origin: string };
  let browser: Browser;
  let bundleBytes = 0;

  beforeAll(async () => {
    const app = join(project, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'main.js'), APP);
    const readme = /```js\n(import \{ loadCore \} from 'kmas\/core\/browser';[\s\S]*?)```/.exec(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(readme, "the README's web-app example").not.toBeNull();
    writeFileSync(join(app, 'readme.js'), readme![1]);
    const result = await build({
      absWorkingDir: project, entryPoints: ['app/main.js', 'app/readme.js'], outdir: 'app/out', bundle: true, format: 'esm', platform: 'browser',
      target: 'es2022', minify: true, loader: { '.wasm': 'file' }, metafile: true, logLevel: 'silent',
    });
    // the bundle was made from the installed package, not from this checkout
    expect(Object.keys(result.metafile.inputs)).toContain('node_modules/kmas/dist/src/core/browser.js');
    expect(Object.keys(result.metafile.inputs)).toContain('node_modules/kmas/build/kmas.wasm');
    const outputs = Object.entries(result.metafile.outputs);
    bundleBytes = outputs.find(([f]) => f.endsWith('main.js'))![1].bytes;
    const wasmOuts = outputs.filter(([f]) => f.endsWith('.wasm'));
    expect(wasmOuts).toHaveLength(1);
    const wasmOut = wasmOuts[0]!;
    expect(wasmOut[1].bytes).toBe(statSync(join(installed, 'build', 'kmas.wasm')).size);
    console.log(`web app: bundle ${bundleBytes} bytes (minified JS), ${wasmOut[0]} ${wasmOut[1].bytes} bytes`);
    web = await serveProject(project);
    browser = await launchChromium();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (web ? web.server.close(() => r()) : r()));
  });

  const ready = async (path: string) => {
    const { page } = browser;
    await page.goto(web.origin + path);
    return page.evaluate('window.kmasApp.then((a) => a.readyMs)').catch((e: Error) => {
      throw new Error(`${e.message}\nbrowser console:\n${browser.console.join('\n')}`);
    }) as Promise<number>;
  };

  it("secp256k1 and P-256 signatures, recovery ids, public keys and ECDH equal @noble/curves' in Node (CSP with 'wasm-unsafe-eval')", async () => {
    const readyMs = await ready('/app/index.html');
    console.log(`web app: core ready ${readyMs.toFixed(0)} ms after navigation start`);
    const input = inputs();
    const got = await browser.page.evaluate(`window.kmasCompute(${JSON.stringify(input)})`);
    expect(got).toEqual(expected(input));
  });

  it("the README's example runs as written and prints true twice (verify, recovery)", async () => {
    const before = browser.console.length;
    let logs = 0;
    const two = browser.page.waitForEvent('console', { predicate: (m) => m.type() === 'log' && ++logs === 2, timeout: 15_000 });
    await browser.page.goto(web.origin + '/app/readme.html');
    await two.catch(() => undefined); // on a time-out, the lines below say what the page did
    expect(browser.console.slice(before)).toEqual(['log: true', 'log: true']);
  });

  it("without 'wasm-unsafe-eval' in the CSP the browser refuses to compile kmas.wasm", async () => {
    await browser.page.goto(web.origin + '/app/no-wasm-eval.html');
    const err = await browser.page.evaluate('window.kmasApp.then(() => "loaded", (e) => String(e))');
    expect(err).toMatch(/CompileError|Content Security Policy|wasm-unsafe-eval/i);
  });

  it('unbundled: a plain <script type="module"> with an import map, loadCore() finding kmas.wasm in the package', async () => {
    await ready('/plain.html');
    const input = inputs();
    const got = await browser.page.evaluate(`(() => { ${COMPUTE}; return window.kmasApp.then(({ core }) => compute(core, ${JSON.stringify(input)})); })()`);
    expect(got).toEqual(expected(input));
  });
});

if (!HAVE_CHROMIUM) it.skip(SKIPPED, () => undefined); // visible in the report as skipped, never as passed
