export { type AllowedHost, OutboundAllowedHosts } from './allowed-hosts';
export * from './forward-proxy';
export * from './outbound-guard';
