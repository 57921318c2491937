// Every REST route, grouped by resource. Later modules add theirs here.

import type { RouteDef } from '../route.ts';
import cancelBatch from './batches/cancel.ts';
import createBatch from './batches/create.ts';
import batchEvents from './batches/events.ts';
import getBatch from './batches/get.ts';
import listBatches from './batches/list.ts';
import batchResults from './batches/results.ts';
import cancelGeneration from './generations/cancel.ts';
import createGeneration from './generations/create.ts';
import generationEvents from './generations/events.ts';
import getGeneration from './generations/get.ts';
import listGenerations from './generations/list.ts';
import transformImage from './images/transform.ts';
import listModels from './models/list.ts';
import getUsage from './usage/get.ts';
import getDailyUsage from './usage/daily.ts';
import listEndUsers from './end-users/index.get.ts';
import cancelWorkflowRun from './workflows/cancel-run.ts';
import createWorkflow from './workflows/create.ts';
import deleteWorkflow from './workflows/delete.ts';
import getWorkflow from './workflows/get.ts';
import getWorkflowRun from './workflows/get-run.ts';
import listWorkflowRuns from './workflows/list-runs.ts';
import retryWorkflowRun from './workflows/retry-run.ts';
import runEvents from './workflows/run-events.ts';
import getWorkflowRunGraph from './workflows/run-graph.ts';
import listWorkflows from './workflows/list.ts';
import replaceWorkflow from './workflows/replace.ts';
import runWorkflow from './workflows/run.ts';
import streamEvents from './events/stream.ts';
import createWebhook from './webhooks/create.ts';
import deleteWebhook from './webhooks/delete.ts';
import listWebhookDeliveries from './webhooks/deliveries.ts';
import getWebhook from './webhooks/get.ts';
import listWebhooks from './webhooks/list.ts';
import recoverWebhook from './webhooks/recover.ts';
import redeliverWebhook from './webhooks/redeliver.ts';
import rotateWebhookSecret from './webhooks/rotate-secret.ts';
import testWebhook from './webhooks/test.ts';
import updateWebhook from './webhooks/update.ts';
import listKeys from './keys/list.ts';
import createKey from './keys/create.ts';
import rotateKey from './keys/rotate.ts';
import revokeKey from './keys/delete.ts';
import getKey from './keys/get.ts';
import getEndUserBudget from './end-users/[endUser]/get.ts';
import setEndUserBudget from './end-users/[endUser]/put.ts';
import removeEndUserBudget from './end-users/[endUser]/delete.ts';
import listAudit from './audit/list.ts';
import getMe from './me/get.ts';
import getSession from './session/get.ts';
import switchSessionWorkspace from './session/workspace.ts';
import adminListAccounts from './admin/list-accounts.ts';
import adminGetAccount from './admin/get-account.ts';
import adminUpdateAccount from './admin/update-account.ts';
import adminRevokeAccountKeys from './admin/revoke-keys.ts';
import adminListWorkspaces from './admin/list-workspaces.ts';
import adminGetWorkspace from './admin/get-workspace.ts';
import adminListModels from './admin/list-models.ts';
import adminUpdateModel from './admin/update-model.ts';
import adminHealth from './admin/health.ts';

export const apiRoutes: RouteDef[] = [
  listModels, getUsage, getDailyUsage, listEndUsers, createGeneration, listGenerations, getGeneration, generationEvents, cancelGeneration, transformImage,
  createBatch, listBatches, getBatch, cancelBatch, batchResults, batchEvents,
  listWorkflows, createWorkflow, getWorkflow, replaceWorkflow, deleteWorkflow, runWorkflow, listWorkflowRuns, getWorkflowRun, runEvents, getWorkflowRunGraph, cancelWorkflowRun, retryWorkflowRun,
  createWebhook, listWebhooks, getWebhook, updateWebhook, deleteWebhook, rotateWebhookSecret,
  listWebhookDeliveries, redeliverWebhook, recoverWebhook, testWebhook, streamEvents,
  listKeys, createKey, rotateKey, revokeKey, getKey, listAudit,
  getEndUserBudget, setEndUserBudget, removeEndUserBudget,
  getMe, getSession, switchSessionWorkspace,
  adminListAccounts, adminGetAccount, adminUpdateAccount, adminRevokeAccountKeys, adminListWorkspaces, adminGetWorkspace,
  adminListModels, adminUpdateModel, adminHealth,
];
