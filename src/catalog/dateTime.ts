/**
 * The `date-time` format of the catalog schemas (RFC 3339 date-time with a
 * time zone, as ajv-formats' full mode checks it), at a cost that does not
 * dominate opening a large catalog. ajv-formats splits every value and runs
 * two capturing regexes: a fresh open of a 1,000-plugin profile checks about
 * 3,000 such values, and those allocations cost more than parsing the files.
 * The host writes every timestamp in `Date.prototype.toISOString` form, which
 * is checked here without allocating; any other form goes to ajv-formats.
 */
import { fullFormats } from 'ajv-formats/dist/formats.js';

const rfc3339DateTime = (fullFormats['date-time'] as { readonly validate: (text: string) => boolean }).validate;
const ISO_INSTANT = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

function digitsAt(text: string, at: number, count: number): number {
  let value = 0;
  for (let i = at; i < at + count; i++) value = value * 10 + text.charCodeAt(i) - 48;
  return value;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  // 31 days in odd months up to July and in even months from August on.
  return 30 + ((month + (month >> 3)) & 1);
}

/** Whether `text` is an RFC 3339 date-time with a time zone (leap second 23:59:60 UTC included), exactly as ajv-formats' full `date-time`. */
export function isDateTime(text: string): boolean {
  if (text.length !== 24 || !ISO_INSTANT.test(text)) return rfc3339DateTime(text);
  const year = digitsAt(text, 0, 4);
  const month = digitsAt(text, 5, 2);
  const day = digitsAt(text, 8, 2);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false;
  const hour = digitsAt(text, 11, 2);
  const minute = digitsAt(text, 14, 2);
  const second = digitsAt(text, 17, 2);
  if (hour <= 23 && minute <= 59 && second <= 59) return true;
  return hour === 23 && minute === 59 && second === 60;
}
