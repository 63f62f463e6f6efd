// UI strings by key. English is the only locale today; another (Traditional
// Chinese first) is a file shaped like en.ts and an entry in `locales`.
import { en, type MessageKey } from './en';

export type { MessageKey };
export type Messages = Record<MessageKey, string>;

const locales: Record<string, Messages> = { en };
let current: Messages = en;

/** Switches the language of later t() calls; unknown locales keep English. */
export function setLocale(locale: string): void {
  current = locales[locale] ?? en;
}

/** The string for `key`, with `{name}` slots filled from `vars`. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = current[key] ?? en[key];
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}
