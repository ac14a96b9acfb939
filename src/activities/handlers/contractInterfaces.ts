/**
 * create_smart_contract_interface, delete_smart_contract_interface, get_smart_contract_interface,
 * list_smart_contract_interfaces. An Ethereum ABI gives `eth.tx` policies the decoded call
 * (policy/contracts.ts); Solana IDLs are stored and listed, not yet used to decode instructions.
 * One interface per contract address and type in an organization.
 */
import { base58 } from '@scure/base';
import { alreadyExists, notFound } from '../../errors.js';
import { requireRoot } from '../../domain/principal.js';
import { timestamp } from '../../domain/records.js';
import { abiProblem, idlProblem } from '../../policy/contracts.js';
import type { ContractInterfaceRow, Tx } from '../../storage/types.js';
import { keysFor, type QueryOperation, type SubmitOperation } from '../types.js';
import { MAX_NAME, Validator, type Obj } from '../../domain/validate.js';

export const INTERFACE_TYPES = ['SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM', 'SMART_CONTRACT_INTERFACE_TYPE_SOLANA'] as const;
/** The specification's limit on the ABI / IDL text. */
export const MAX_INTERFACE = 400 * 1024;

/** The key an address is looked up by; undefined when it is not an address of that chain. */
export function contractAddressKey(type: ContractInterfaceRow['type'], address: string): string | undefined {
  if (type === 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM') return /^0x[0-9a-fA-F]{40}$/.test(address) ? address.toLowerCase() : undefined;
  try {
    return base58.decode(address).length === 32 ? address : undefined;
  } catch {
    return undefined;
  }
}

function record(r: ContractInterfaceRow): Record<string, unknown> {
  return {
    organizationId: r.organizationId, smartContractInterfaceId: r.id, smartContractAddress: r.address,
    smartContractInterface: r.interface, type: r.type, label: r.label, notes: r.notes,
    createdAt: timestamp(r.createdMs), updatedAt: timestamp(r.updatedMs),
  };
}

async function requireInterface(tx: Tx, organizationId: string, id: string): Promise<ContractInterfaceRow> {
  const r = await tx.contractInterfaces.get(organizationId, id);
  if (!r) throw notFound(`smart contract interface ${id} not found`, 'SMART_CONTRACT_INTERFACE_NOT_FOUND');
  return r;
}

function readId(v: Validator, o: Obj): string | undefined {
  return v.string(o, 'smartContractInterfaceId', 'smartContractInterfaceId', { required: true, max: 100 });
}

interface CreateIntent { smartContractAddress: string; smartContractInterface: string; type: ContractInterfaceRow['type']; label: string; notes: string }

export const createSmartContractInterface: SubmitOperation<CreateIntent, { smartContractInterfaceId: string }> = {
  kind: 'submit',
  path: 'create_smart_contract_interface',
  types: { ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE: keysFor('ACTIVITY_TYPE_CREATE_SMART_CONTRACT_INTERFACE') },
  validate(params) {
    const v = new Validator();
    const type = v.enumOf(params, 'type', 'type', INTERFACE_TYPES);
    const address = v.string(params, 'smartContractAddress', 'smartContractAddress', { required: true, max: 100 });
    if (type && address !== undefined && !contractAddressKey(type, address)) {
      v.fail('smartContractAddress', type === 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM' ? 'must be an Ethereum address (0x and 40 hex digits)' : 'must be a Solana program id (base58 of 32 bytes)');
    }
    const text = v.string(params, 'smartContractInterface', 'smartContractInterface', { required: true, max: MAX_INTERFACE });
    if (type && text !== undefined) {
      const problem = type === 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM' ? abiProblem(text) : idlProblem(text);
      if (problem) v.fail('smartContractInterface', `${type === 'SMART_CONTRACT_INTERFACE_TYPE_ETHEREUM' ? 'the ABI' : 'the IDL'} ${problem}`);
    }
    const label = v.string(params, 'label', 'label', { required: true, max: MAX_NAME });
    const notes = v.string(params, 'notes', 'notes', { max: 4096 }) ?? '';
    v.done();
    return { smartContractAddress: address!, smartContractInterface: text!, type: type!, label: label!, notes };
  },
  // one organization's interfaces one request at a time (across nodes): one per contract address
  locks: (_i, organizationId) => [{ name: 'contract-interfaces', key: organizationId }],
  async authorize(p, i, store) {
    await refuseTakenAddress(store, p.organization.id, i);
    requireRoot(p, 'manage smart contract interfaces');
  },
  async execute(ctx, i) {
    // again under the lock (another node may have stored one since authorize), and for a user a policy admits
    await refuseTakenAddress(ctx.tx, ctx.organization.id, i);
    const row: ContractInterfaceRow = {
      id: ctx.newId(), organizationId: ctx.organization.id, type: i.type, address: i.smartContractAddress,
      addressKey: contractAddressKey(i.type, i.smartContractAddress)!, interface: i.smartContractInterface,
      label: i.label, notes: i.notes, createdMs: ctx.nowMs, updatedMs: ctx.nowMs,
    };
    await ctx.tx.contractInterfaces.insert(row);
    return { smartContractInterfaceId: row.id };
  },
};

async function refuseTakenAddress(tx: Tx, organizationId: string, i: { type: ContractInterfaceRow['type']; smartContractAddress: string }): Promise<void> {
  const existing = await tx.contractInterfaces.byAddress(organizationId, i.type, contractAddressKey(i.type, i.smartContractAddress)!);
  if (existing) {
    throw alreadyExists(`smartContractAddress: ${i.smartContractAddress} already has an interface (${existing.id}); delete it first`);
  }
}

export const deleteSmartContractInterface: SubmitOperation<{ smartContractInterfaceId: string }, { smartContractInterfaceId: string }> = {
  kind: 'submit',
  path: 'delete_smart_contract_interface',
  types: { ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE: keysFor('ACTIVITY_TYPE_DELETE_SMART_CONTRACT_INTERFACE') },
  validate(params) {
    const v = new Validator();
    const id = readId(v, params);
    v.done();
    return { smartContractInterfaceId: id! };
  },
  async authorize(p, i, store) {
    await requireInterface(store, p.organization.id, i.smartContractInterfaceId);
    requireRoot(p, 'manage smart contract interfaces');
  },
  async execute(ctx, i) {
    await ctx.tx.contractInterfaces.delete(ctx.organization.id, i.smartContractInterfaceId);
    return { smartContractInterfaceId: i.smartContractInterfaceId };
  },
};

export const getSmartContractInterface: QueryOperation<{ smartContractInterfaceId: string }> = {
  kind: 'query',
  path: 'get_smart_contract_interface',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate(body) {
    const v = new Validator();
    const id = readId(v, body);
    v.done();
    return { smartContractInterfaceId: id! };
  },
  execute: async (ctx, q) => ({ smartContractInterface: record(await requireInterface(ctx.tx, ctx.organization.id, q.smartContractInterfaceId)) }),
};

export const listSmartContractInterfaces: QueryOperation<object> = {
  kind: 'query',
  path: 'list_smart_contract_interfaces',
  parentMayRead: true,
  specWrapper: 'wrap',
  validate: () => ({}),
  execute: async (ctx) => ({ smartContractInterfaces: (await ctx.tx.contractInterfaces.list(ctx.organization.id)).map(record) }),
};
