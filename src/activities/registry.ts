/** Path → operation. Adding an operation = writing its handler and listing it here. */
import type { Operation, QueryOperation, SubmitOperation } from './types.js';
import { getActivity, listActivities } from './handlers/activities.js';
import { getOrganization, getOrganizationConfigs, updateOrganizationName, updateRootQuorum, whoami } from './handlers/organizations.js';
import { createApiOnlyUsers, createUsers, deleteUsers, getUser, listUsers, updateUser, updateUserEmail, updateUserName, updateUserPhoneNumber } from './handlers/users.js';
import { createApiKeys, deleteApiKeys, getApiKey, getApiKeys } from './handlers/apiKeys.js';
import {
  createPrivateKeyTag, createUserTag, deletePrivateKeyTags, deleteUserTags, listPrivateKeyTags, listUserTags,
  updatePrivateKeyTag, updateUserTag,
} from './handlers/tags.js';
import { removeOrganizationFeature, setOrganizationFeature } from './handlers/features.js';
import { KEY_QUERIES, KEY_SUBMITS } from './handlers/keyOperations.js';
import { createSubOrganization, deleteSubOrganization, listSubOrgs, listVerifiedSubOrgs } from './handlers/subOrganizations.js';
import { createReadOnlySession, createReadWriteSession } from './handlers/sessions.js';
import { createOauthProviders, deleteOauthProviders, getOauthProviders, oauth, oauthLogin, stampLogin } from './handlers/oauth.js';
import { emailAuth, initOtpAuth, initUserEmailRecovery, otpAuth, recoverUser } from './handlers/emailAuth.js';
import { initOtp, otpLogin, verifyOtp } from './handlers/otp.js';
import { createAuthenticators, deleteAuthenticators, getAuthenticator, getAuthenticators } from './handlers/authenticators.js';
import { approveActivity, createPolicies, createPolicy, deletePolicies, deletePolicy, getPolicy, getPolicyEvaluations, listPolicies, rejectActivity, updatePolicy } from './handlers/policies.js';
import { createSmartContractInterface, deleteSmartContractInterface, getSmartContractInterface, listSmartContractInterfaces } from './handlers/contractInterfaces.js';
import { exportSecrets, importSecrets, initImportSecrets, listSecrets } from './handlers/secrets.js';
import { createInvitations, deleteInvitation } from './handlers/invitations.js';
import { getIpAllowlist, removeIpAllowlist, setIpAllowlist } from './handlers/ipAllowlist.js';
import { solSendTransaction, ethSendRawTransaction, ethSendTransaction, getNonces, getSendTransactionStatus, getWalletAddressBalances, listSupportedAssets } from './handlers/broadcast.js';
import { LOG_QUERIES } from './handlers/log.js';
import { createWebhookEndpoint, deleteWebhookEndpoint, listWebhookEndpoints, updateWebhookEndpoint } from './handlers/webhookEndpoints.js';

const QUERIES: QueryOperation<any>[] = [
  getActivity, listActivities, whoami, getOrganization, getOrganizationConfigs,
  listUsers, getUser, getApiKey, getApiKeys, listUserTags, listPrivateKeyTags, listSubOrgs, listWebhookEndpoints, getAuthenticator, getAuthenticators,
  getOauthProviders, listVerifiedSubOrgs, getPolicy, listPolicies, getPolicyEvaluations, getIpAllowlist,
  getSmartContractInterface, listSmartContractInterfaces, listSecrets, getSendTransactionStatus, getNonces, getWalletAddressBalances, listSupportedAssets,
  ...KEY_QUERIES, ...LOG_QUERIES,
];
const SUBMITS: SubmitOperation<any, any>[] = [
  createUsers, createApiOnlyUsers, deleteUsers, updateUser, updateUserName, updateUserEmail, updateUserPhoneNumber,
  createApiKeys, deleteApiKeys,
  createUserTag, updateUserTag, deleteUserTags, createPrivateKeyTag, updatePrivateKeyTag, deletePrivateKeyTags,
  setOrganizationFeature, removeOrganizationFeature, setIpAllowlist, removeIpAllowlist,
  createSmartContractInterface, deleteSmartContractInterface,
  initImportSecrets, importSecrets, exportSecrets, createInvitations, deleteInvitation, ethSendTransaction, ethSendRawTransaction, solSendTransaction,
  createSubOrganization, deleteSubOrganization,
  createWebhookEndpoint, updateWebhookEndpoint, deleteWebhookEndpoint,
  createReadWriteSession, createReadOnlySession, updateRootQuorum, updateOrganizationName, createAuthenticators, deleteAuthenticators,
  createOauthProviders, deleteOauthProviders, oauth, oauthLogin, stampLogin,
  emailAuth, initOtpAuth, otpAuth, initUserEmailRecovery, recoverUser, initOtp, verifyOtp, otpLogin,
  createPolicy, createPolicies, updatePolicy, deletePolicy, deletePolicies, approveActivity, rejectActivity,
  ...KEY_SUBMITS,
];

export class Registry {
  private readonly queries = new Map<string, QueryOperation<any>>();
  private readonly submits = new Map<string, SubmitOperation<any, any>>();

  constructor(ops: Operation[]) {
    for (const op of ops) {
      const m = op.kind === 'query' ? this.queries : this.submits;
      if (m.has(op.path)) throw new Error(`duplicate operation ${op.kind}/${op.path}`);
      (m as Map<string, Operation>).set(op.path, op);
    }
  }
  query(path: string): QueryOperation<any> | undefined { return this.queries.get(path); }
  submit(path: string): SubmitOperation<any, any> | undefined { return this.submits.get(path); }
  queryPaths(): string[] { return [...this.queries.keys()]; }
  submitPaths(): string[] { return [...this.submits.keys()]; }
}

export function defaultRegistry(): Registry {
  return new Registry([...QUERIES, ...SUBMITS]);
}
