/** Checks the options of {@link PluginHost.open} that no type can: ranges and enumerations. */
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import type { PluginHostOptions } from './PluginHost.js';

function invalid(option: string, message: string): HostError {
  return hostError('HOST_INVALID_OPTIONS', `PluginHost option ${option} ${message}`, { details: { option } });
}

const positive = (v: number | undefined): boolean => v === undefined || (Number.isFinite(v) && v > 0);

/** Checks the numeric and enumerated options before anything is opened. */
export function checkHostOptions(o: PluginHostOptions): Result<void, HostError> {
  for (const name of ['callTimeoutMs', 'maxTotalTimeoutMs', 'maxInFlight'] as const) {
    if (!positive(o[name])) return err(invalid(name, `must be a positive number, got ${String(o[name])}`));
  }
  if (o.maxInFlight !== undefined && !Number.isInteger(o.maxInFlight)) return err(invalid('maxInFlight', `must be an integer, got ${o.maxInFlight}`));
  if (o.idleTimeoutMs !== undefined && !(o.idleTimeoutMs >= 0)) {
    return err(invalid('idleTimeoutMs', `must be 0 (never) or a positive number, got ${String(o.idleTimeoutMs)}`));
  }
  if (o.backoffScheduleMs !== undefined && (o.backoffScheduleMs.length === 0 || !o.backoffScheduleMs.every((ms) => Number.isFinite(ms) && ms > 0))) {
    return err(invalid('backoffScheduleMs', 'must list at least one positive wait'));
  }
  if (o.activation !== undefined && o.activation !== 'next-open' && o.activation !== 'immediate') {
    return err(invalid('activation', `must be "next-open" or "immediate", got ${JSON.stringify(o.activation)}`));
  }
  return ok(undefined);
}
