// The README's quick-start script is a file the tests run (test/package/install.test.ts), so the
// README and that file must not drift apart.
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { root } from '../server/build.js';

describe('the README', () => {
  it("quick-start script is examples/quickstart.mjs, the file the install test runs", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const file = readFileSync(join(root, 'examples', 'quickstart.mjs'), 'utf8');
    const block = /```js\n(\/\/ kmas quick start:[\s\S]*?)```/.exec(readme);
    expect(block, 'a ```js block starting with "// kmas quick start:"').not.toBeNull();
    expect(block![1]).toBe(file);
  });
});
