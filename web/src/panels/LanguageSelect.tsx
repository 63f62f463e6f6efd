import { LOCALE_NAMES, LOCALES, setLocale, useLocale, useT } from '../i18n';

/** The settings' language menu: English / 繁體中文, each named in its own language. */
export function LanguageSelect() {
  const t = useT();
  const locale = useLocale();
  return (
    <select
      className="language-select"
      data-testid="language-select"
      value={locale}
      onChange={(e) => setLocale(e.target.value)}
      title={t('language.label')}
      aria-label={t('language.label')}
    >
      {LOCALES.map((l) => (
        <option key={l} value={l} lang={l}>
          {LOCALE_NAMES[l]}
        </option>
      ))}
    </select>
  );
}
