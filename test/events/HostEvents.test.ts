import diagnostics_channel from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import { diagnosticsChannelName, HostEvents } from '../../src/events/HostEvents.js';

describe('HostEvents', () => {
  it('delivers to listeners and to the diagnostics channel, isolating a throwing listener', () => {
    const events = new HostEvents();
    const seen: string[] = [];
    events.on('stderr', () => {
      throw new Error('listener bug');
    });
    const off = events.on('stderr', (p) => seen.push(p.line));
    const published: unknown[] = [];
    const onMessage = (m: unknown): void => void published.push(m);
    diagnostics_channel.subscribe(diagnosticsChannelName('stderr'), onMessage);
    events.emit('stderr', { plugin_id: 'p', line: 'one' });
    off();
    events.emit('stderr', { plugin_id: 'p', line: 'two' });
    diagnostics_channel.unsubscribe(diagnosticsChannelName('stderr'), onMessage);
    expect(seen).toEqual(['one']);
    expect(published).toEqual([{ plugin_id: 'p', line: 'one' }, { plugin_id: 'p', line: 'two' }]);
  });
});

describe('HostEvents.wants', () => {
  it('is true only while a listener or a diagnostics channel subscriber exists', () => {
    const events = new HostEvents();
    expect(events.wants('exit')).toBe(false);
    const off = events.on('exit', () => undefined);
    expect(events.wants('exit')).toBe(true);
    off();
    expect(events.wants('exit')).toBe(false);
    const onMessage = (): void => undefined;
    diagnostics_channel.subscribe(diagnosticsChannelName('exit'), onMessage);
    expect(events.wants('exit')).toBe(true);
    diagnostics_channel.unsubscribe(diagnosticsChannelName('exit'), onMessage);
    expect(events.wants('exit')).toBe(false);
  });
});
