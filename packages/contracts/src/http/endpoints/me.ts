import { type Endpoint, json } from '../endpoint';
import { MeChanges, MeResponse } from '../me';

export const ME_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/me',
    summary: 'Your user: name and time zone',
    tag: 'me',
    auth: 'user',
    status: 200,
    response: json(MeResponse),
    handler: 'getMe',
  },
  {
    method: 'patch',
    path: '/v1/me',
    summary: 'Set your time zone',
    description:
      'The zone schedules default to and reminders are told in. Until it is set, a chat that names a timeZone sets it; before either, it is UTC.',
    tag: 'me',
    auth: 'user',
    body: json(MeChanges),
    status: 200,
    response: json(MeResponse),
    handler: 'updateMe',
  },
];
