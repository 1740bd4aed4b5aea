import { bootService } from '@jarvis/service-kit';
import { loadEnv } from './env';
import { registerHandlers } from './handlers';

const env = loadEnv();

await bootService(
  {
    name: 'scheduler',
    env,
    port: env.HTTP_PORT,
    database: {
      env,
      schema: 'scheduler',
      migrations: new URL('../migrations', import.meta.url),
    },
  },
  ({ bus, pool }) => {
    registerHandlers(bus, pool);
  },
);
