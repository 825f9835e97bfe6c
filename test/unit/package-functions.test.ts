// The functions' archive installs where Cloud Build installs it (cli/build/package-functions.ts):
// a project that installed levelset from a tarball (or a checkout) depends, in the archive, on what
// the bundle leaves out at the versions its lockfile pins, never on a file it does not hold.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  archiveLockfile,
  EXTERNAL,
  installableDependencies,
  type Lockfile,
} from '../../cli/build/package-functions.ts';

const lock: Lockfile = {
  lockfileVersion: 3,
  packages: {
    '': { name: 'p', dependencies: { levelset: 'file:../levelset-0.1.0.tgz', zod: '4.6.7' } },
    'node_modules/levelset': {
      version: '0.1.0',
      resolved: 'file:../levelset-0.1.0.tgz',
      dependencies: Object.fromEntries([...EXTERNAL, 'left-pad'].map((n) => [n, '*'])),
    },
    'node_modules/left-pad': { version: '1.3.0' },
    'node_modules/zod': { version: '4.6.7' },
    ...Object.fromEntries(EXTERNAL.map((n) => [`node_modules/${n}`, { version: '9.9.9' }])),
  },
};

describe('installableDependencies', () => {
  it('a file dependency gives way to what the bundle leaves out, pinned, in package.json and the lockfile', () => {
    const pkg: Record<string, unknown> = {
      dependencies: { levelset: 'file:../levelset-0.1.0.tgz', zod: '4.6.7' },
    };
    const archived = archiveLockfile(installableDependencies(pkg, lock));
    const expected = { zod: '4.6.7', ...Object.fromEntries(EXTERNAL.map((n) => [n, '9.9.9'])) };
    assert.deepEqual(pkg.dependencies, expected);
    assert.deepEqual(archived.packages?.['']?.dependencies, expected);
    assert.equal(archived.packages?.['node_modules/levelset'], undefined, 'not in the archive');
    assert.equal(archived.packages?.['node_modules/left-pad'], undefined, 'what only it needed neither');
    assert.ok(!JSON.stringify(archived).includes('file:'));
  });

  it('a project that installed levelset from the registry is left as it is', () => {
    const pkg: Record<string, unknown> = { dependencies: { levelset: '0.1.0' } };
    assert.equal(installableDependencies(pkg, lock), lock);
    assert.deepEqual(pkg.dependencies, { levelset: '0.1.0' });
  });
});
