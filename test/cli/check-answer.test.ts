import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { verdictText } from '../../src/cli/check-answer.js';

describe("check's verdict in words: another server's answer read as sent", () => {
  it('names every header append action Envoy defines, not only those serve sends', () => {
    const header = (key: string, append_action: number) => ({ header: { key, value: 'v' }, append_action });
    const text = verdictText({
      status: { code: 0 },
      ok_response: { headers: [header('x-a', 0), header('x-b', 1), header('x-c', 2), header('x-d', 3)] },
    });
    assert.match(text, /x-a: v {2}\[APPEND_IF_EXISTS_OR_ADD\]/);
    assert.match(text, /x-b: v {2}\[ADD_IF_ABSENT\]/);
    assert.match(text, /x-c: v {2}\[OVERWRITE_IF_EXISTS_OR_ADD\]/);
    assert.match(text, /x-d: v {2}\[OVERWRITE_IF_EXISTS\]/);
  });

  it('shows an action outside the enum as its number', () => {
    const text = verdictText({ status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-e', value: 'v' }, append_action: 7 }] } });
    assert.match(text, /x-e: v {2}\[7\]/);
  });
});
