// The graphile-worker task list: file name = task identifier.

import type { TaskList } from 'graphile-worker';

export const taskList: TaskList = {};
