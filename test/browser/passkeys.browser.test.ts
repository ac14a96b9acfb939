// Passkeys made by a real browser: headless Chromium (Debian's, driven by playwright-core) with a
// virtual WebAuthn authenticator creates credentials (attestation "none" and "direct", i.e. packed
// with a certificate) and assertions through navigator.credentials on http://localhost; kmas
// registers them (create_authenticators) and accepts the assertions as X-Stamp-Webauthn stamps.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, randomBytes } from 'node:crypto';
import type { Page } from 'playwright-core';
import { HAVE_CHROMIUM, launchChromium, missingChromium, type Browser } from './chromium.js';
import { startTestServer, submitBody, type TestServer } from '../server/harness.js';

const SKIPPED = HAVE_CHROMIUM ? '' : missingChromium('the browser passkey test');

interface Created { rawId: string; clientDataJSON: string; attestationObject: string }
interface Asserted { rawId: string; clientDataJSON: string; authenticatorData: string; signature: string }

describe.skipIf(!HAVE_CHROMIUM)('passkeys from headless Chromium', () => {
  let ts: TestServer;
  let server: Server;
  let origin: string;
  let browserSession: Browser;
  let page: Page;

  beforeAll(async () => {
    ts = await startTestServer();
    server = createServer((_req, res) => { res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>kmas passkeys</title>'); });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    origin = `http://localhost:${(server.address() as AddressInfo).port}`;
    browserSession = await launchChromium();
    page = browserSession.page;
    await page.goto(origin);
    const cdp = await browserSession.context.newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', { options: {
      protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true,
    } });
  }, 120_000);

  afterAll(async () => {
    await browserSession?.close();
    await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
    await ts?.stop();
  });

  /** navigator.credentials.create in the page (ES256 only), base64url results. */
  const create = (challenge: string, attestation: 'none' | 'direct') => page.evaluate(async ({ challenge, attestation }) => {
    const b64u = (b: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const fromB64u = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    const cred = await navigator.credentials.create({ publicKey: {
      challenge: fromB64u(challenge), rp: { id: 'localhost', name: 'kmas test' },
      user: { id: crypto.getRandomValues(new Uint8Array(16)), name: 'root', displayName: 'root' },
      pubKeyCredParams: [{ type: 'public-key', alg: -7 }], attestation,
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'preferred' },
    } }) as PublicKeyCredential;
    const r = cred.response as AuthenticatorAttestationResponse;
    return { rawId: b64u(cred.rawId), clientDataJSON: b64u(r.clientDataJSON), attestationObject: b64u(r.attestationObject) };
  }, { challenge, attestation }) as Promise<Created>;

  /** navigator.credentials.get over a request body, as @turnkey/webauthn-stamper does it (challenge = hex SHA-256 of the body). */
  const assertion = (rawId: string, body: string) => page.evaluate(async ({ rawId, hex }) => {
    const b64u = (b: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(b))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
    const fromB64u = (s: string) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
    const cred = await navigator.credentials.get({ publicKey: {
      challenge: new TextEncoder().encode(hex), rpId: 'localhost', allowCredentials: [{ type: 'public-key', id: fromB64u(rawId) }], userVerification: 'preferred',
    } }) as PublicKeyCredential;
    const r = cred.response as AuthenticatorAssertionResponse;
    return { rawId: b64u(cred.rawId), clientDataJSON: b64u(r.clientDataJSON), authenticatorData: b64u(r.authenticatorData), signature: b64u(r.signature) };
  }, { rawId, hex: createHash('sha256').update(body).digest('hex') }) as Promise<Asserted>;

  const stampOf = (a: Asserted) => JSON.stringify({ authenticatorData: a.authenticatorData, clientDataJson: a.clientDataJSON, credentialId: a.rawId, signature: a.signature });

  for (const attestation of ['none', 'direct'] as const) {
    it(`registers a Chromium passkey (attestation ${attestation}) and accepts its assertions as stamps for queries and submits`, async () => {
      const challenge = randomBytes(32).toString('base64url');
      const c = await create(challenge, attestation);
      const made: any = await ts.sdk.createAuthenticators({ userId: ts.rootUserId, authenticators: [{
        authenticatorName: `chromium ${attestation}`, challenge,
        attestation: { credentialId: c.rawId, clientDataJson: c.clientDataJSON, attestationObject: c.attestationObject, transports: ['AUTHENTICATOR_TRANSPORT_INTERNAL'] },
      }] } as any);
      const a: any = (await ts.sdk.getAuthenticator({ authenticatorId: made.authenticatorIds[0] } as any)).authenticator;
      expect(a.attestationType).toBe(attestation === 'none' ? 'none' : 'packed');
      expect(a.credentialId).toBe(c.rawId);

      const who = JSON.stringify({ organizationId: ts.orgId });
      const q = await ts.raw('/public/v1/query/whoami', who, { key: undefined, headers: { 'X-Stamp-Webauthn': stampOf(await assertion(c.rawId, who)) } });
      expect(q.status, q.text).toBe(200);
      expect(q.json.userId).toBe(ts.rootUserId);

      const submit = submitBody('ACTIVITY_TYPE_CREATE_WALLET', ts.orgId, { walletName: `chromium-${attestation}`, accounts: [] });
      const s = await ts.raw('/public/v1/submit/create_wallet', submit, { key: undefined, headers: { 'X-Stamp-Webauthn': stampOf(await assertion(c.rawId, submit)) } });
      expect(s.status, s.text).toBe(200);
      expect(s.json.activity.status).toBe('ACTIVITY_STATUS_COMPLETED');

      // An assertion over one body does not stamp another.
      const other = await ts.raw('/public/v1/query/whoami', JSON.stringify({ organizationId: ts.orgId, x: 1 }), { key: undefined, headers: { 'X-Stamp-Webauthn': stampOf(await assertion(c.rawId, who)) } });
      expect(other.status).toBe(401);
    }, 60_000);
  }
});

if (!HAVE_CHROMIUM) it.skip(SKIPPED, () => undefined); // visible in the report as skipped, never as passed
