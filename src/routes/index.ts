// Every REST route, grouped by resource. Later modules add theirs here.

import type { RouteDef } from '../route.ts';
import listModels from './models/list.ts';
import getUsage from './usage/get.ts';

export const apiRoutes: RouteDef[] = [listModels, getUsage];
