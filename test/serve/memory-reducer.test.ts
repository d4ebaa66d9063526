import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { memoryReducerOn, NO_MEMORY_REDUCER } from '../../src/common/memory-reducer.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

describe('serve started without V8\'s memory reducer', () => {
  it('tells whether the reducer is on from node\'s own options, the last one naming it winning', () => {
    assert.equal(memoryReducerOn([]), true);
    assert.equal(memoryReducerOn(['--max-old-space-size=640']), true);
    assert.equal(memoryReducerOn([NO_MEMORY_REDUCER]), false);
    assert.equal(memoryReducerOn(['--expose-gc', NO_MEMORY_REDUCER, '--trace-gc']), false);
    assert.equal(memoryReducerOn([NO_MEMORY_REDUCER, '--memory-reducer']), true);
    assert.equal(memoryReducerOn(['--memory-reducer', NO_MEMORY_REDUCER]), false);
  });

  it('is how the image starts node: the option before the script in the ENTRYPOINT', () => {
    const dockerfile = readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8');
    const entrypoint = /^ENTRYPOINT\s+(\[.*\])\s*$/m.exec(dockerfile)?.[1];
    assert.ok(entrypoint !== undefined, 'the Dockerfile has an exec-form ENTRYPOINT');
    assert.deepEqual(JSON.parse(entrypoint), ['node', NO_MEMORY_REDUCER, '/app/dist/src/cli/main.js']);
  });

  it('is how `make run` starts node', () => {
    const makefile = readFileSync(join(PACKAGE_ROOT, 'Makefile'), 'utf8');
    const recipe = /^run:.*\n((?:\t.*\n)+)/m.exec(makefile)?.[1];
    assert.ok(recipe !== undefined, 'the Makefile has a run target');
    assert.match(recipe, new RegExp(`^\\tnode ${NO_MEMORY_REDUCER} dist/src/cli/main\\.js serve$`, 'm'));
  });
});
