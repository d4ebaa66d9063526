import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RegistrationSeal, SealUnreadable } from '../../src/token/registration-seal.js';

describe('the seal of registration access tokens', () => {
  const seal = new RegistrationSeal('initial-access-token-0123456789');
  const token = 'registration-access-token-of-client-a';
  const uri = 'https://issuer.example.com/reg/client-a';

  it('opens what it sealed for the same client, and never holds the token in the clear', () => {
    const sealed = seal.seal(token, 'client-a', uri);
    assert.equal(sealed.includes(Buffer.from(token)), false);
    assert.equal(seal.open(sealed, seal.keyId, 'client-a', uri), token);
    assert.notDeepEqual(seal.seal(token, 'client-a', uri), sealed, 'a fresh IV each time');
  });

  it('tells a changed initial access token, a value moved to another client or another address, and a damaged value apart', () => {
    const sealed = seal.seal(token, 'client-a', uri);
    const other = new RegistrationSeal('another-initial-access-token');
    assert.notEqual(other.keyId, seal.keyId);
    const cases: Array<[string, () => string, RegExp]> = [
      ['another key', () => other.open(sealed, seal.keyId, 'client-a', uri), /sealed with another TOKEN_REGISTRATION_TOKEN .*set TOKEN_REGISTRATION_TOKEN back/],
      ['another client', () => seal.open(sealed, seal.keyId, 'client-b', uri), /was altered .*or was moved from another client/],
      ['another registration_client_uri', () => seal.open(sealed, seal.keyId, 'client-a', 'https://attacker.example.net/reg/client-a'), /registration of client client-a was altered .*the token is not sent anywhere.*delete the client at the issuer by hand and replace it$/],
      ['a flipped bit', () => seal.open(Buffer.concat([sealed.subarray(0, -1), Buffer.from([(sealed.at(-1) ?? 0) ^ 1])]), seal.keyId, 'client-a', uri), /damaged/],
      ['cut short', () => seal.open(sealed.subarray(0, 20), seal.keyId, 'client-a', uri), /damaged/],
    ];
    for (const [what, open, message] of cases) assert.throws(open, (error: unknown) => error instanceof SealUnreadable && message.test(error.message), what);
  });

  it('names its key without revealing it', () => {
    assert.match(seal.keyId, /^[0-9a-f]{16}$/);
    assert.equal(new RegistrationSeal('initial-access-token-0123456789').keyId, seal.keyId, 'the same token gives the same key');
  });
});
