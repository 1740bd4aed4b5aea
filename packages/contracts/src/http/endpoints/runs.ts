import {
  orchestratorRunsGet,
  orchestratorRunsList,
  RunGetQuery,
  RunIdParams,
  RunsGetResponse,
  RunsListQuery,
  RunsListResponse,
} from '../../orchestrator-runs';
import { type Endpoint, json } from '../endpoint';

export const RUNS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/runs',
    summary: 'Your runs, newest first',
    tag: 'runs',
    auth: 'user',
    query: RunsListQuery,
    status: 200,
    response: json(RunsListResponse),
    errors: ['timeout'],
    forward: { rpc: orchestratorRunsList },
  },
  {
    method: 'get',
    path: '/v1/runs/{id}',
    summary: 'One run with its steps',
    tag: 'runs',
    auth: 'user',
    params: RunIdParams,
    query: RunGetQuery,
    status: 200,
    response: json(RunsGetResponse),
    errors: ['not_found', 'timeout'],
    forward: { rpc: orchestratorRunsGet },
  },
];
