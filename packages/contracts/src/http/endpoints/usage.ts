import { ModelUsageResponse, modelUsage, UsageQuery } from '../../model-usage';
import { type Endpoint, json } from '../endpoint';

export const USAGE_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/usage',
    summary: 'Your model usage per day, with budgets and what is left',
    tag: 'usage',
    auth: 'user',
    query: UsageQuery,
    status: 200,
    response: json(ModelUsageResponse),
    errors: ['timeout'],
    forward: { rpc: modelUsage },
  },
];
