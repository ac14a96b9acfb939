/**
 * First start: root organization, one root user, one P-256 API key (ROOT_API_PUBLIC_KEY, or a
 * generated pair written to DATA_DIR/root-api-key.json, mode 0600); DATA_DIR/bootstrap.json
 * names them. Later starts read the same state back.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config.js';
import type { Logger } from './log.js';
import type { Db, Tx } from './storage/types.js';
import { generateP256ApiKeyPair, type ApiKeyPair } from './domain/keypair.js';
import { initKeys } from './domain/keys.js';
import type { Vault } from './crypto/index.js';

export interface BootstrapInfo {
  organizationId: string;
  organizationName: string;
  userId: string;
  apiKeyId: string;
  apiPublicKey: string;
  signerPublicKey?: string;
  /** Signs the session JWTs of oauth_login / stamp_login (verifySessionJwtSignature's override). */
  sessionSignerPublicKey?: string;
  /** Signs the verifiable activity log's checkpoints (raw Ed25519, hex; GET /.well-known/kmas-log-key). */
  logPublicKey?: string;
}

export const BOOTSTRAP_FILE = 'bootstrap.json';
export const ROOT_KEY_FILE = 'root-api-key.json';

function writeFileAtomic(file: string, content: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, content, { mode });
  fs.chmodSync(tmp, mode);
  fs.renameSync(tmp, file);
}

export async function ensureBootstrap(db: Db, config: Config, log: Logger): Promise<{ info: BootstrapInfo; rootApiKey?: ApiKeyPair; vault: Vault }> {
  const out = await ensureBootstrapState(db, config, log);
  // Master key + bundle signer (created sealed on first start); signerPublicKey goes into bootstrap.json.
  const { vault } = await initKeys(db, config.dataDir, config.masterKey, log, config.signWorkers);
  out.info.signerPublicKey = vault.signerPublicKey;
  out.info.sessionSignerPublicKey = vault.sessionSignerPublicKey;
  out.info.logPublicKey = vault.logPublicKey;
  return { ...out, vault };
}

async function ensureBootstrapState(db: Db, config: Config, log: Logger): Promise<{ info: BootstrapInfo; rootApiKey?: ApiKeyPair }> {
  const bootstrapFile = path.join(config.dataDir, BOOTSTRAP_FILE);
  const keyFile = path.join(config.dataDir, ROOT_KEY_FILE);

  /** The root organization exists (made by an earlier start, or by another node): its bootstrap.json. */
  const existing = async (): Promise<{ info: BootstrapInfo; rootApiKey?: ApiKeyPair }> => {
    let info = readBootstrapFile(bootstrapFile);
    if (!info) {
      // A node of a shared database that did not create it, or a crash between the first commit
      // and writing bootstrap.json: written from the database.
      info = await db.read(bootstrapFromStore);
      if (!info) throw new Error(`${bootstrapFile} is missing and the database holds no root organization with a root API key`);
      writeFileAtomic(bootstrapFile, JSON.stringify(info, null, 2) + '\n', 0o644);
      if (db.engine === 'sqlite') log.warn('bootstrap.json was missing and has been rebuilt from the database', { bootstrapFile });
      else log.info('bootstrap.json written from the database', { bootstrapFile, organizationId: info.organizationId });
    }
    if (config.rootApiPublicKey && config.rootApiPublicKey !== info.apiPublicKey) {
      log.warn('ROOT_API_PUBLIC_KEY differs from the registered root key and is ignored (it applies on first start only)');
    }
    const rootApiKey = readKeyFile(keyFile);
    return { info, rootApiKey: rootApiKey && rootApiKey.publicKey === info.apiPublicKey ? rootApiKey : undefined };
  };

  if (await db.read((tx) => tx.organizations.count()) > 0) return existing();

  const rootApiKey = config.rootApiPublicKey ? undefined : generateP256ApiKeyPair();
  const publicKey = config.rootApiPublicKey ?? rootApiKey!.publicKey;
  // Written before the commit: a crash after it must not leave a root key nobody holds.
  if (rootApiKey) writeFileAtomic(keyFile, JSON.stringify(rootApiKey, null, 2) + '\n', 0o600);
  const now = Date.now();
  const info: BootstrapInfo = {
    organizationId: randomUUID(),
    organizationName: config.rootOrganizationName,
    userId: randomUUID(),
    apiKeyId: randomUUID(),
    apiPublicKey: publicKey,
  };
  // Nodes starting at once on one database: the first to take the lock creates it, the others find it.
  const created = await db.write(async (tx) => {
    await tx.lock('bootstrap', 'root-organization');
    if (await tx.organizations.count() > 0) return false;
    await tx.organizations.insert({ id: info.organizationId, name: info.organizationName, parentId: null, rootQuorumThreshold: 1, createdMs: now, updatedMs: now });
    await tx.users.insert({ id: info.userId, organizationId: info.organizationId, name: config.rootUserName, email: null, phoneNumber: null, isRoot: true, createdMs: now, updatedMs: now });
    await tx.apiKeys.insert({
      id: info.apiKeyId, organizationId: info.organizationId, userId: info.userId, name: 'root API key', publicKey,
      curve: 'API_KEY_CURVE_P256', credentialType: 'CREDENTIAL_TYPE_API_KEY_P256', expirationSeconds: null, expiresAtMs: null,
      createdMs: now, updatedMs: now,
    });
    return true;
  });
  if (!created) {
    // another node's root key is the one registered: this one was never used
    if (rootApiKey) fs.rmSync(keyFile, { force: true });
    return existing();
  }
  writeFileAtomic(bootstrapFile, JSON.stringify(info, null, 2) + '\n', 0o644);
  log.info('bootstrap: created the root organization', {
    ...info,
    bootstrapFile,
    ...(rootApiKey ? { rootApiKeyFile: keyFile } : { rootApiKeyFrom: 'ROOT_API_PUBLIC_KEY' }),
  });
  return { info, rootApiKey };
}

async function bootstrapFromStore(tx: Tx): Promise<BootstrapInfo | undefined> {
  const root = (await tx.organizations.roots())[0];
  if (!root) return undefined;
  for (const userId of await tx.users.rootUserIds(root.id)) {
    const user = await tx.users.get(root.id, userId);
    const key = (await tx.apiKeys.listByUser(root.id, userId))[0];
    if (user && key) {
      return { organizationId: root.id, organizationName: root.name, userId, apiKeyId: key.id, apiPublicKey: key.publicKey };
    }
  }
  return undefined;
}

function readBootstrapFile(file: string): BootstrapInfo | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as BootstrapInfo;
    if (typeof o.organizationId === 'string' && typeof o.userId === 'string' && typeof o.apiKeyId === 'string') return o;
  } catch { /* fallthrough */ }
  return undefined;
}

function readKeyFile(file: string): ApiKeyPair | undefined {
  try {
    const o = JSON.parse(fs.readFileSync(file, 'utf8')) as ApiKeyPair;
    if (typeof o.publicKey === 'string' && typeof o.privateKey === 'string') return o;
  } catch { /* no generated key */ }
  return undefined;
}
