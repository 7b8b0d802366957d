/**
 * A yes/no check of a header value with its last answer kept: an HTTP client
 * sends the same Host, Origin, Accept and Content-Type on every request, so
 * the gateway parses each value once rather than per request. The check must
 * depend on the value alone.
 */
export function lastVerdictOf(verdict: (value: string) => boolean): (value: string) => boolean {
  let lastValue: string | undefined;
  let lastVerdict = false;
  return (value) => {
    if (value !== lastValue) {
      lastVerdict = verdict(value);
      lastValue = value;
    }
    return lastVerdict;
  };
}
