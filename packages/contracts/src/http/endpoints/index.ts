import type { Endpoint } from '../endpoint';
import { ADMIN_ENDPOINTS } from './admin';
import { APPROVALS_ENDPOINTS } from './approvals';
import { CHAT_ENDPOINTS } from './chat';
import { CONVERSATIONS_ENDPOINTS } from './conversations';
import { DOCS_ENDPOINTS } from './docs';
import { DOCUMENTS_ENDPOINTS } from './documents';
import { EXTRACTIONS_ENDPOINTS } from './extractions';
import { FACTS_ENDPOINTS } from './facts';
import { FILES_ENDPOINTS } from './files';
import { KEYS_ENDPOINTS } from './keys';
import { ME_ENDPOINTS } from './me';
import { MEMORY_ENDPOINTS } from './memory';
import { MISSIONS_ENDPOINTS } from './missions';
import { NOTIFICATIONS_ENDPOINTS } from './notifications';
import { NOTIFICATIONS_PUSH_ENDPOINTS } from './notifications-push';
import { RUNS_ENDPOINTS } from './runs';
import { SCHEDULES_ENDPOINTS } from './schedules';
import { SCREENSHOTS_ENDPOINTS } from './screenshots';
import { USAGE_ENDPOINTS } from './usage';
import { WORKSPACES_ENDPOINTS } from './workspaces';

// Every endpoint the gateway serves under /v1, in the order the OpenAPI document lists them.
export const ENDPOINTS: Endpoint[] = [
  ...CHAT_ENDPOINTS,
  ...CONVERSATIONS_ENDPOINTS,
  ...MEMORY_ENDPOINTS,
  ...FACTS_ENDPOINTS,
  ...EXTRACTIONS_ENDPOINTS,
  ...FILES_ENDPOINTS,
  ...DOCUMENTS_ENDPOINTS,
  ...USAGE_ENDPOINTS,
  ...RUNS_ENDPOINTS,
  ...SCREENSHOTS_ENDPOINTS,
  ...WORKSPACES_ENDPOINTS,
  ...APPROVALS_ENDPOINTS,
  ...MISSIONS_ENDPOINTS,
  ...SCHEDULES_ENDPOINTS,
  ...NOTIFICATIONS_ENDPOINTS,
  ...NOTIFICATIONS_PUSH_ENDPOINTS,
  ...ME_ENDPOINTS,
  ...KEYS_ENDPOINTS,
  ...ADMIN_ENDPOINTS,
  ...DOCS_ENDPOINTS,
];
