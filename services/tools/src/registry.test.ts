import type { ToolDescriptor } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { ToolRegistry } from './registry';

function describeTool(name: string, risk: ToolDescriptor['risk'] = 'safe'): ToolDescriptor {
  return { name, description: `the ${name} tool`, risk, inputSchema: { type: 'object' } };
}

describe('ToolRegistry', () => {
  it('starts empty', () => {
    expect(new ToolRegistry().list()).toEqual([]);
  });

  it('lists tools sorted by name, whatever the registration order', () => {
    const registry = new ToolRegistry();
    for (const name of ['web_search', 'browser', 'documents', 'notify']) {
      registry.register(describeTool(name));
    }

    expect(registry.list().map((tool) => tool.name)).toEqual([
      'browser',
      'documents',
      'notify',
      'web_search',
    ]);
  });

  it('refuses a name registered twice and keeps the first', () => {
    const registry = new ToolRegistry();
    const first = describeTool('web_search');
    registry.register(first);

    expect(() => registry.register(describeTool('web_search', 'risky'))).toThrow(
      'tool web_search is registered twice',
    );
    expect(registry.list()).toEqual([first]);
  });

  it('hands out a copy, so callers cannot change what is registered', () => {
    const registry = new ToolRegistry();
    registry.register(describeTool('notify'));

    registry.list().push(describeTool('sneaky'));

    expect(registry.list().map((tool) => tool.name)).toEqual(['notify']);
  });
});
