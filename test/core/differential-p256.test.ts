import { differentialSuite } from './differential.js';
differentialSuite('p256', 0x7032);
