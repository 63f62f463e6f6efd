// What graph/'s checks find wrong, as data: a message key and the values for
// its slots. graph/ is pure and speaks no language; whoever shows a problem
// puts it into words in the current one (i18n's inWords). Each check names
// the keys it can give, so a key missing from the UI strings fails the type
// check where the problem is put into words.

export interface Problem<K extends string = string> {
  key: K;
  vars?: Record<string, string | number>;
}

export const problem = <K extends string>(key: K, vars?: Record<string, string | number>): Problem<K> =>
  vars ? { key, vars } : { key };
