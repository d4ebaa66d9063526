import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { UsageError } from '../../src/cli/arguments.js';
import type { CommandLine } from '../../src/cli/command.js';
import { bodyFromAuthorization, headerOption, requestFromOptions } from '../../src/cli/request-options.js';
import type { CheckRequestMessage } from '../../src/envoy/messages.js';
import { viewCheckRequest } from '../../src/envoy/request-view.js';

const KEY = '0f0e0d0c-0b0a-4908-8706-050403020100';
const line = (options: CommandLine['options']): CommandLine => ({ positionals: [], options });
const noStdin = async () => '';
const build = (options: CommandLine['options']) => requestFromOptions(line(options), noStdin);
const viewOf = (request: CheckRequestMessage) => viewCheckRequest(request, { clientIpSource: { kind: 'peer' }, maxBodyBytes: 1_048_576 });

describe('--header NAME=VALUE or NAME:VALUE', () => {
  const cases: ReadonlyArray<readonly [string, readonly [string, string]]> = [
    ['x-request-id=abc', ['x-request-id', 'abc']],
    ['X-Request-Id:abc', ['x-request-id', 'abc']],
    ['x-request-id: abc', ['x-request-id', 'abc']],
    ['x-request-id= abc', ['x-request-id', ' abc']],
    ['authorization=1001:key', ['authorization', '1001:key']],
    ['authorization:1001:key', ['authorization', '1001:key']],
    ['x-forwarded-for=2001:db8::1, 10.0.0.1', ['x-forwarded-for', '2001:db8::1, 10.0.0.1']],
    ['cookie:a=b', ['cookie', 'a=b']],
    [':authority=example.com', [':authority', 'example.com']],
    ['content-length=', ['content-length', '']],
  ];
  for (const [option, expected] of cases) {
    it(`reads "${option}"`, () => assert.deepEqual(headerOption(option), expected));
  }
  for (const option of ['no-separator', '=value', ':', 'x y=z']) {
    it(`refuses "${option}", saying what to type`, () => {
      assert.throws(() => headerOption(option), (error: unknown) => error instanceof UsageError && /try --header x-request-id=abc/.test(error.message));
    });
  }
});

describe('the body made up from --authorization', () => {
  const cases: ReadonlyArray<readonly [string | undefined, string | undefined]> = [
    [`1001:${KEY}`, `{"siteid":1001,"apikey":"${KEY}"}`],
    // The site id goes in as a number only in the form the decision accepts (canonicalSiteId).
    [`01001:${KEY}`, `{"siteid":"01001","apikey":"${KEY}"}`],
    [`9223372036854775807:${KEY}`, `{"siteid":9223372036854775807,"apikey":"${KEY}"}`],
    [`9223372036854775808:${KEY}`, `{"siteid":"9223372036854775808","apikey":"${KEY}"}`],
    [':x', '{"siteid":"","apikey":"x"}'],
    ['no-colon', undefined],
    [undefined, undefined],
  ];
  for (const [authorization, body] of cases) {
    it(`from ${JSON.stringify(authorization)}`, () => assert.equal(bodyFromAuthorization(authorization), body));
  }

  it('says on which grounds it made the body up, with the key masked', async () => {
    const { request, notes } = await build({ authorization: `1001:${KEY}` });
    assert.equal(viewOf(request).input.body.kind, 'text');
    assert.equal(notes.length, 1);
    assert.match(notes[0] ?? '', /no --body given: the body is made up from --authorization/);
    assert.ok(!(notes[0] ?? '').includes(KEY));
  });

  it('says nothing when --body or --no-body chooses', async () => {
    assert.deepEqual((await build({ authorization: `1001:${KEY}`, body: '{}' })).notes, []);
    assert.deepEqual((await build({ authorization: `1001:${KEY}`, 'no-body': true })).notes, []);
  });
});

describe('the CheckRequest built from request options, as the request view reads it', () => {
  it('carries the header, client address and body, in every header and body mode', async () => {
    for (const modes of [{}, { 'raw-headers': true }, { 'raw-body': true }, { 'raw-headers': true, 'raw-body': true }]) {
      const { request } = await build({ authorization: `1001:${KEY}`, ip: '203.0.113.7', body: '{"a":1}', ...modes });
      for (const source of [{ kind: 'peer' }, { kind: 'xff', trustedHops: 0 }, { kind: 'header', name: 'x-envoy-external-address' }] as const) {
        const { input } = viewCheckRequest(request, { clientIpSource: source, maxBodyBytes: 1_048_576 });
        assert.equal(input.authorization, `1001:${KEY}`, JSON.stringify(modes));
        assert.equal(input.clientAddress, '203.0.113.7', `${JSON.stringify(modes)} ${source.kind}`);
        assert.deepEqual(input.body, { kind: 'text', text: '{"a":1}' }, JSON.stringify(modes));
      }
      const http = request.attributes?.request?.http;
      assert.equal('header_map' in (http ?? {}), 'raw-headers' in modes);
      assert.equal('raw_body' in (http ?? {}), 'raw-body' in modes);
    }
  });

  it('lets --header replace a default header and joins a repeated one as Envoy does', async () => {
    const { request } = await build({ header: ['x-forwarded-for=198.51.100.1', 'x-forwarded-for=203.0.113.7', 'X-Extra:1'], 'no-body': true });
    const headers = request.attributes?.request?.http?.headers ?? {};
    assert.equal(headers['x-forwarded-for'], '198.51.100.1,203.0.113.7');
    assert.equal(headers['x-extra'], '1');
    assert.equal(viewCheckRequest(request, { clientIpSource: { kind: 'xff', trustedHops: 0 }, maxBodyBytes: 1_048_576 }).input.clientAddress, '203.0.113.7');
  });

  it('passes --context as context_extensions, keys keeping their case', async () => {
    const { request } = await build({ context: ['body_credentials=optional', 'Route=a=b'], 'no-body': true });
    assert.deepEqual(request.attributes?.context_extensions, { body_credentials: 'optional', Route: 'a=b' });
    assert.equal(viewOf(request).input.bodyCredentials, 'optional');
  });

  it('sends no body with --no-body, so that a declared length is up to --header', async () => {
    const { request } = await build({ authorization: `1001:${KEY}`, 'no-body': true, header: ['content-length=12'] });
    assert.deepEqual(viewOf(request).input.body, { kind: 'empty', lengthDeclared: true });
  });

  it('refuses conflicting or malformed options with a usage error', async () => {
    const refusals: ReadonlyArray<readonly [CommandLine['options'], RegExp]> = [
      [{ body: '{}', 'no-body': true }, /--body and --no-body exclude each other/],
      [{ context: ['no-equals'] }, /try --context body_credentials=optional/],
      [{ request: '/nonexistent/request.json' }, /--request \/nonexistent\/request\.json: cannot read it \(ENOENT\)/],
      [{ request: '-', ip: '203.0.113.7', 'raw-body': true }, /drop --ip, --raw-body, or drop --request/],
    ];
    for (const [options, message] of refusals) {
      await assert.rejects(build(options), (error: unknown) => error instanceof UsageError && message.test(error.message), JSON.stringify(options));
    }
  });

  it('reads --request - from standard input', async () => {
    const json = JSON.stringify({ attributes: { request: { http: { headers: { authorization: `1001:${KEY}` } } } } });
    const { request } = await requestFromOptions(line({ request: '-' }), async () => json);
    assert.equal(viewOf(request).input.authorization, `1001:${KEY}`);
  });
});
