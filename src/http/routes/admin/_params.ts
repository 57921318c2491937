// Path ids and list queries of the admin routes, checked before any SQL (400 naming them).

import { getRouterParam, type H3Event } from 'h3';
import * as v from 'valibot';
import { parsePageQuery } from '../../../admin/service.ts';
import { errors } from '../../../errors.ts';
import { isUuid, Uuid } from '../../../schemas.ts';
import { queryParam } from '../../route.ts';

export const AccountIdParam = v.pipe(Uuid, v.description('Account (user) id.'));
export const WorkspaceIdParam = v.pipe(Uuid, v.description('Workspace id.'));
export const ModelIdParam = v.pipe(v.string(), v.description('Catalog id, URL-encoded (`local%2Fsketch`).'));

function uuidParam(event: H3Event): string {
  const id = getRouterParam(event, 'id');
  if (!isUuid(id)) throw errors.invalid('id: must be a uuid');
  return id.toLowerCase();
}

export const accountId = uuidParam;
export const workspaceId = uuidParam;

const MODEL_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$/;

export function modelId(event: H3Event): string {
  let id = getRouterParam(event, 'id') ?? '';
  try {
    id = decodeURIComponent(id);
  } catch {
    throw errors.invalid('id: must be a catalog id');
  }
  if (!MODEL_ID_RE.test(id)) throw errors.invalid('id: must be a catalog id');
  return id;
}

export const pageQuery = {
  limit: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(200), v.description('Entries per page, 1 to 200 (default 50).')),
  cursor: v.pipe(v.string(), v.description('`nextCursor` of the previous page.')),
};

export function readPageQuery(event: H3Event) {
  return parsePageQuery(queryParam(event, 'limit'), queryParam(event, 'cursor'), queryParam(event, 'q'));
}
