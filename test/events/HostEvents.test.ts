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

describe('HostEvents.subscriptions (what PluginHost.events gives)', () => {
  it('subscribes and unsubscribes, and gives no way to emit', () => {
    const events = new HostEvents();
    const view = events.subscriptions;
    const seen: string[] = [];
    const listener = (p: { readonly line: string }): void => void seen.push(p.line);
    view.on('stderr', listener);
    events.emit('stderr', { plugin_id: 'p', line: 'one' });
    view.off('stderr', listener);
    events.emit('stderr', { plugin_id: 'p', line: 'two' });
    expect(seen).toEqual(['one']);
    expect(Object.keys(view).sort()).toEqual(['off', 'on', 'once']);
    expect(Object.isFrozen(view)).toBe(true);
  });

  it('delivers a once listener one time, and off removes it before it fires', () => {
    const events = new HostEvents();
    const seen: string[] = [];
    events.subscriptions.once('stderr', (p) => seen.push(`once:${p.line}`));
    const removed = (p: { readonly line: string }): void => void seen.push(`removed:${p.line}`);
    events.subscriptions.once('stderr', removed);
    events.subscriptions.off('stderr', removed);
    events.emit('stderr', { plugin_id: 'p', line: 'one' });
    events.emit('stderr', { plugin_id: 'p', line: 'two' });
    expect(seen).toEqual(['once:one']);
    expect(events.wants('stderr')).toBe(false);
  });
});
