import { z } from 'zod';
import { ScreenshotIdParams } from '../../tools-screenshots';
import type { Endpoint } from '../endpoint';

export const SCREENSHOTS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/screenshots/{id}',
    summary: 'A screenshot the browser took for you, as PNG',
    description:
      'The `screenshot.path` of a browser tool result. Kept for SCREENSHOT_RETENTION_DAYS (30 by ' +
      'default), then 404. Needs the key like every endpoint, so a page shows it by fetching it ' +
      'and using an object URL rather than an `<img src>` to this address.',
    tag: 'runs',
    auth: 'user',
    params: ScreenshotIdParams,
    status: 200,
    response: { 'image/png': z.string().meta({ format: 'binary' }) },
    errors: ['not_found', 'timeout'],
    handler: 'getScreenshot',
  },
];
