import { differentialSuite } from './differential.js';
differentialSuite('secp256k1', 0x6b31);
