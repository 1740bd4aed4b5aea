// prom-client's default metric collectors, one module each, which its typings do not declare:
// each registers its metrics on the registry (see metrics.ts for why they are called one by one).
declare module 'prom-client/lib/metrics/*.js' {
  import type { Registry, RegistryContentType } from 'prom-client';

  const collect: (registry: Registry<RegistryContentType>, config: object) => void;
  export default collect;
}
