export { type AllowedHost, OutboundAllowedHosts } from './allowed-hosts';
export * from './outbound-guard';
