// UI strings by key, in English (en.ts) or Traditional Chinese (zh-TW.ts).
// t() reads the current locale; components call useT() instead, which also
// subscribes them to the locale so that switching re-renders every string.
import { create } from 'zustand';
import { en, type MessageKey } from './en';
import { zhTW } from './zh-TW';

export type { MessageKey };
export type Messages = Record<MessageKey, string>;

export const LOCALES = ['en', 'zh-TW'] as const;
export type Locale = (typeof LOCALES)[number];

/** Each locale's name, written in that language (the language menu shows these). */
export const LOCALE_NAMES: Record<Locale, string> = { en: 'English', 'zh-TW': '繁體中文' };

const locales: Record<Locale, Messages> = { en, 'zh-TW': zhTW };
const STORAGE_KEY = 'codefy.locale';

const isLocale = (x: unknown): x is Locale => typeof x === 'string' && (LOCALES as readonly string[]).includes(x);

/** Traditional Chinese for zh-TW, zh-Hant(-*) and zh-HK/zh-MO browsers; English otherwise. */
export function localeFromLanguages(languages: readonly string[]): Locale {
  const first = (languages[0] ?? '').toLowerCase();
  if (/^zh-(tw|hk|mo)\b/.test(first) || /^zh-hant\b/.test(first)) return 'zh-TW';
  return 'en';
}

function remembered(): Locale | null {
  try {
    const v = globalThis.localStorage?.getItem(STORAGE_KEY);
    return isLocale(v) ? v : null;
  } catch {
    return null;
  }
}

/** The locale to start in: the one chosen before in this browser, else the browser's language. */
export function initialLocale(): Locale {
  const nav = globalThis.navigator;
  return remembered() ?? localeFromLanguages(nav?.languages?.length ? nav.languages : [nav?.language ?? 'en']);
}

let current: Messages = en;

/** The current locale, as a tiny store so that components re-render when it changes. */
export const useLocaleStore = create<{ locale: Locale }>(() => ({ locale: 'en' }));

function apply(locale: Locale): void {
  current = locales[locale];
  useLocaleStore.setState({ locale });
  if (typeof document !== 'undefined') document.documentElement.lang = locale;
}

/** Switches the language (unknown locales give English), remembers it in this browser and sets <html lang>. */
export function setLocale(locale: string): void {
  const next: Locale = isLocale(locale) ? locale : 'en';
  apply(next);
  try {
    globalThis.localStorage?.setItem(STORAGE_KEY, next);
  } catch {
    // Private mode or a full storage: the choice lasts for this page only.
  }
}

/** Starts in initialLocale() without writing it down (a browser default is not a choice). */
export function startLocale(): void {
  apply(initialLocale());
}

/** The string for `key`, with `{name}` slots filled from `vars`. */
export function t(key: MessageKey, vars?: Record<string, string | number>): string {
  const text = current[key] ?? en[key];
  if (!vars) return text;
  return text.replace(/\{(\w+)\}/g, (whole, name: string) => (name in vars ? String(vars[name]) : whole));
}

/**
 * A finding of graph/'s pure checks (a `Problem`: a message key and its
 * values) in the current language. Its keys are typed by the check that gives
 * them, so one missing from the UI strings fails the type check here.
 */
export function inWords(found: { key: MessageKey; vars?: Record<string, string | number> }): string {
  return t(found.key, found.vars);
}

/** The current locale; a component that calls this re-renders when it changes. */
export function useLocale(): Locale {
  return useLocaleStore((s) => s.locale);
}

/** t(), for components: subscribes the caller to the locale so its strings follow a switch. */
export function useT(): typeof t {
  useLocaleStore((s) => s.locale);
  return t;
}
