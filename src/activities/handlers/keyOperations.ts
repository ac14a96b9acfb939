/** The key, wallet, signing and import/export operations (issue 4), listed once for the registry. */
import type { QueryOperation, SubmitOperation } from '../types.js';
import { createPrivateKeys, deletePrivateKeys, getPrivateKey, listPrivateKeys } from './privateKeys.js';
import {
  createWallet, createWalletAccounts, deleteWalletAccounts, deleteWallets, getWallet, getWalletAccount, listWalletAccounts, listWallets, updateWallet,
} from './wallets.js';
import { signRawPayload, signRawPayloads, signTransaction } from './signing.js';
import {
  exportPrivateKey, exportWallet, exportWalletAccount, importPrivateKey, importWallet, initImportPrivateKey, initImportWallet,
} from './importExport.js';

export const KEY_QUERIES: QueryOperation<any>[] = [
  getPrivateKey, listPrivateKeys, getWallet, listWallets, getWalletAccount, listWalletAccounts,
];

export const KEY_SUBMITS: SubmitOperation<any, any>[] = [
  createPrivateKeys, deletePrivateKeys,
  createWallet, createWalletAccounts, updateWallet, deleteWallets, deleteWalletAccounts,
  signRawPayload, signRawPayloads, signTransaction,
  initImportWallet, importWallet, initImportPrivateKey, importPrivateKey,
  exportWallet, exportPrivateKey, exportWalletAccount,
];
