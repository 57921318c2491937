// Every REST route, grouped by resource. Later modules add theirs here.

import type { RouteDef } from '../route.ts';
import cancelGeneration from './generations/cancel.ts';
import createGeneration from './generations/create.ts';
import generationEvents from './generations/events.ts';
import getGeneration from './generations/get.ts';
import listGenerations from './generations/list.ts';
import transformImage from './images/transform.ts';
import listModels from './models/list.ts';
import getUsage from './usage/get.ts';
import getDailyUsage from './usage/daily.ts';
import cancelWorkflowRun from './workflows/cancel-run.ts';
import getWorkflowRun from './workflows/get-run.ts';
import listWorkflowRuns from './workflows/list-runs.ts';
import retryWorkflowRun from './workflows/retry-run.ts';
import runEvents from './workflows/run-events.ts';
import getWorkflowRunGraph from './workflows/run-graph.ts';
import listWorkflows from './workflows/list.ts';
import runWorkflow from './workflows/run.ts';

export const apiRoutes: RouteDef[] = [
  listModels, getUsage, getDailyUsage, createGeneration, listGenerations, getGeneration, generationEvents, cancelGeneration, transformImage,
  listWorkflows, runWorkflow, listWorkflowRuns, getWorkflowRun, runEvents, getWorkflowRunGraph, cancelWorkflowRun, retryWorkflowRun,
];
