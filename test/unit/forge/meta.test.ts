// The identity accessors of src/forge/meta.ts: what an object has, or an error naming the missing field.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { nameOf, namespacedName, objectId, uidOf } from '../../../src/forge/meta.ts';

describe('forge/meta', () => {
  const claim = { kind: 'PersistentVolumeClaim', metadata: { namespace: 'a', name: 'b', uid: 'u' } };
  it('gives the namespace, name and UID an object has', () => {
    assert.deepEqual(objectId(claim), { namespace: 'a', name: 'b', uid: 'u' });
    assert.deepEqual(namespacedName(claim), { namespace: 'a', name: 'b' });
    assert.equal(nameOf(claim), 'b');
    assert.equal(uidOf(claim), 'u');
  });
  it('names the object and the field it lacks', () => {
    assert.throws(() => objectId({ kind: 'PersistentVolumeClaim', metadata: { namespace: 'a', name: 'b' } }),
      { message: 'PersistentVolumeClaim a/b has no metadata.uid' });
    assert.throws(() => nameOf({ metadata: {} }), { message: 'object has no metadata.name' });
    assert.throws(() => namespacedName({ kind: 'Pod', metadata: { name: 'p' } }), { message: 'Pod p has no metadata.namespace' });
  });
  it('checks only the fields it gives', () => {
    assert.equal(nameOf({ metadata: { name: 'n' } }), 'n');
    assert.deepEqual(namespacedName({ metadata: { namespace: 'a', name: 'b' } }), { namespace: 'a', name: 'b' });
  });
});
