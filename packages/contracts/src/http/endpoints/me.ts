import {
  InstructionsPutBody,
  MemoryInstructionsResponse,
  memoryInstructionsGet,
  memoryInstructionsPut,
} from '../../memory-instructions';
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
  {
    method: 'get',
    path: '/v1/me/instructions',
    summary: 'Your standing instructions, with their tokens and the cap',
    description:
      'The text is in every prompt, with your standing rules (facts of category rule). Together ' +
      'they must fit `cap` tokens; `rulesTokens` is what the rules take of it.',
    tag: 'me',
    auth: 'user',
    status: 200,
    response: json(MemoryInstructionsResponse),
    errors: ['timeout'],
    forward: { rpc: memoryInstructionsGet },
  },
  {
    method: 'put',
    path: '/v1/me/instructions',
    summary: 'Write your standing instructions',
    description:
      'Replaces the text (up to 8000 characters; empty clears it). Text that would take the ' +
      'instructions and rules past the cap answers 400 naming the cap and the tokens in use, and ' +
      'nothing is changed.',
    tag: 'me',
    auth: 'user',
    body: json(InstructionsPutBody),
    status: 200,
    response: json(MemoryInstructionsResponse),
    errors: ['timeout'],
    forward: { rpc: memoryInstructionsPut },
  },
];
