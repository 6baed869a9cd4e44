import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiError, invalid } from '../src/errors.ts';

describe('ApiError', () => {
  it('carries its status, title, detail and fields, and no stack trace to capture', () => {
    const err = invalid([{ path: 'url', message: 'must be a URL' }]);
    assert.ok(err instanceof ApiError && err instanceof Error);
    assert.equal(err.status, 400);
    assert.equal(err.title, 'Invalid request');
    assert.equal(err.message, 'The request has invalid fields.');
    assert.deepEqual(err.errors, [{ path: 'url', message: 'must be a URL' }]);
    assert.doesNotMatch(err.stack ?? '', /\n\s+at /);
  });

  it('leaves the stack traces of every other error as they were', () => {
    invalid([]);
    assert.match(new Error('other').stack ?? '', /\n\s+at /);
  });
});
