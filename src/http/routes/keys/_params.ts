// Path id of the key routes, checked before any SQL (400 naming it).

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { errors } from '../../../errors.ts';
import { isUuid, Uuid } from '../../../schemas.ts';

export const KeyIdParam = v.pipe(Uuid, v.description('Key id from `GET /keys` (stable across rotations).'));

export function keyId(event: H3Event): string {
  const id = getRouterParam(event, 'id');
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  return id.toLowerCase();
}
