import {
  ApprovalDecisionBody,
  ApprovalIdParams,
  ApprovalsListQuery,
  ApprovalsListResponse,
  orchestratorApprovalsList,
} from '../../orchestrator-approvals';
import { ApprovalDecisionResponse } from '../chat';
import { type Endpoint, json } from '../endpoint';

export const APPROVALS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/approvals',
    summary: 'Tool calls waiting for your approval',
    tag: 'approvals',
    auth: 'user',
    query: ApprovalsListQuery,
    status: 200,
    response: json(ApprovalsListResponse),
    errors: ['timeout'],
    forward: { rpc: orchestratorApprovalsList },
  },
  {
    method: 'post',
    path: '/v1/approvals/{id}',
    summary: 'Approve or deny; answers with the reply of the run it let go on',
    tag: 'approvals',
    auth: 'user',
    params: ApprovalIdParams,
    body: json(ApprovalDecisionBody),
    status: 200,
    response: json(ApprovalDecisionResponse),
    errors: ['not_found', 'conflict', 'budget_exceeded', 'timeout'],
    handler: 'decideApproval',
  },
];
