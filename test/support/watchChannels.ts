/** The LineChannels a test's sessions send on, to read how many bytes each holds. */
import { vi } from 'vitest';
import { LineChannel } from '../../src/framing/LineChannel.js';

/** Every LineChannel that sends from now on (a spy on its send; the test restores it with vi.restoreAllMocks). */
export function watchChannels(): Set<LineChannel> {
  const channels = new Set<LineChannel>();
  const send = LineChannel.prototype.send;
  vi.spyOn(LineChannel.prototype, 'send').mockImplementation(function (this: LineChannel, ...args) {
    channels.add(this);
    return send.apply(this, args);
  });
  return channels;
}
