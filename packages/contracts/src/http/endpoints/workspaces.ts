import { z } from 'zod';
import {
  ToolsWorkspacesListResponse,
  toolsWorkspacesList,
  WorkspaceFileParams,
  WorkspaceFilePutResponse,
  WorkspaceParams,
} from '../../tools-workspaces';
import { type Endpoint, json } from '../endpoint';

const FILE_PATH = '/v1/workspaces/{kind}/{id}/files/{path}';

const SERVED_AS_DOWNLOAD =
  'Always served as a download (`Content-Disposition: attachment`), with ' +
  "`X-Content-Type-Options: nosniff`, `Content-Security-Policy: sandbox; default-src 'none'` and " +
  '`Cache-Control: private, no-store`. Content-Type is the stored type when it is PNG, JPEG, GIF, ' +
  'WebP, plain text, CSV, JSON or PDF, and application/octet-stream otherwise (an HTML or SVG ' +
  'file never runs in this origin). Needs the key like every endpoint: a page shows an image by ' +
  'fetching it and using an object URL.';

export const WORKSPACES_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/workspaces/{kind}/{id}/files',
    summary: "The files of a conversation's or a mission's workspace",
    description:
      'What run_code sees at /workspace for that conversation or mission, with your use of ' +
      'your workspace quota (all your workspaces together). A workspace with no files answers ' +
      'an empty list.',
    tag: 'workspaces',
    auth: 'user',
    params: WorkspaceParams,
    status: 200,
    response: json(ToolsWorkspacesListResponse),
    errors: ['timeout'],
    forward: { rpc: toolsWorkspacesList },
  },
  {
    method: 'get',
    path: FILE_PATH,
    multiSegmentParam: 'path',
    summary: 'Download a workspace file',
    description: SERVED_AS_DOWNLOAD,
    tag: 'workspaces',
    auth: 'user',
    params: WorkspaceFileParams,
    status: 200,
    response: { 'application/octet-stream': z.string().meta({ format: 'binary' }) },
    errors: ['not_found', 'timeout'],
    handler: 'getWorkspaceFile',
  },
  {
    method: 'put',
    path: FILE_PATH,
    multiSegmentParam: 'path',
    summary: 'Upload a file to a workspace, or replace one',
    description:
      'The body is the file, as it is (no form). Its Content-Type is kept as the file’s type ' +
      'unless it says nothing specific (none, application/octet-stream, or a form encoding); ' +
      "then the name's extension decides. 201 for a new file, 200 when it replaced one. " +
      'Larger than WORKSPACE_FILE_MAX_MB (25 MiB by default), or past your workspace quota: ' +
      '413, and nothing of it is kept.',
    tag: 'workspaces',
    auth: 'user',
    params: WorkspaceFileParams,
    body: {
      'application/octet-stream': z.string().meta({ format: 'binary', description: 'The file.' }),
    },
    status: 201,
    response: json(WorkspaceFilePutResponse),
    errors: ['timeout'],
    handler: 'putWorkspaceFile',
  },
  {
    method: 'delete',
    path: FILE_PATH,
    multiSegmentParam: 'path',
    summary: 'Delete a workspace file',
    tag: 'workspaces',
    auth: 'user',
    params: WorkspaceFileParams,
    status: 204,
    errors: ['not_found', 'timeout'],
    handler: 'deleteWorkspaceFile',
  },
];
