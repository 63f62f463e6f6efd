// @vitest-environment jsdom
import './dom';
import { act, cleanup, fireEvent, render, screen } from '@testing-library/react';
import { afterEach, describe, expect, it } from 'vitest';
import { initialLocale, localeFromLanguages, setLocale, t, useLocaleStore, type MessageKey } from '../src/i18n';
import { en } from '../src/i18n/en';
import { zhTW } from '../src/i18n/zh-TW';
import { BottomPanel } from '../src/panels/BottomPanel';
import { LanguageSelect } from '../src/panels/LanguageSelect';
import { ReactFlowProvider } from '@xyflow/react';
import { useCatalogue } from '../src/store/catalogue';
import { resetEditorForTests } from '../src/store/editor';
import { Palette } from '../src/panels/Palette';
import { nodeTexts } from '../src/i18n/nodeText';
import { defsByName, nodeDefs } from './helpers';

const slots = (text: string) => [...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort();

/** zh-TW strings that may equal the English: names and notations read the same in both. */
const SAME_IN_BOTH = new Set<MessageKey>(['facts.batchValue']); // only numbers and signs

afterEach(() => {
  cleanup();
  act(() => setLocale('en'));
  localStorage.clear();
});

describe('the Traditional Chinese locale', () => {
  it('has every English key, with the same {slots}', () => {
    for (const key of Object.keys(en) as MessageKey[]) {
      expect(zhTW[key], key).toBeTypeOf('string');
      expect(slots(zhTW[key]), key).toEqual(slots(en[key]));
    }
    expect(Object.keys(zhTW).sort()).toEqual(Object.keys(en).sort());
  });

  it('translates every string (none left in English except the listed few)', () => {
    const untranslated = (Object.keys(en) as MessageKey[]).filter((k) => zhTW[k] === en[k] && !SAME_IN_BOTH.has(k));
    expect(untranslated).toEqual([]);
    // Each string holds Han characters unless it is listed as the same in both.
    const noHan = (Object.keys(en) as MessageKey[]).filter((k) => !SAME_IN_BOTH.has(k) && !/\p{Script=Han}/u.test(zhTW[k]));
    expect(noHan).toEqual([]);
  });

  it('uses Traditional characters, not Simplified ones', () => {
    // Simplified forms of characters the editor's words use (执行 节点 储存 设 连 导 数 错 误 训练 载 关 显 …; 查 is the same in both).
    const simplified = /[执节储设连导数错误训练载关显选择图检输绘轮损时态请为这个们无缓]/u;
    const found = Object.entries(zhTW).filter(([, v]) => simplified.test(v));
    expect(found).toEqual([]);
  });
});

describe('switching the language', () => {
  it('changes what t() gives, keeps filling slots, remembers the choice and sets <html lang>', () => {
    expect(t('toolbar.run')).toBe('Run');
    setLocale('zh-TW');
    expect(t('toolbar.run')).toBe('執行');
    expect(t('file.opened', { name: 'toy', nodes: 3 })).toBe('已開啟「toy」（3 個節點）。');
    expect(localStorage.getItem('codefy.locale')).toBe('zh-TW');
    expect(document.documentElement.lang).toBe('zh-TW');
    expect(initialLocale()).toBe('zh-TW');
    setLocale('fr');
    expect(t('toolbar.run')).toBe('Run');
    expect(useLocaleStore.getState().locale).toBe('en');
  });

  it('starts from the browser language when nothing was chosen', () => {
    expect(localeFromLanguages(['zh-TW', 'en'])).toBe('zh-TW');
    expect(localeFromLanguages(['zh-Hant-TW'])).toBe('zh-TW');
    expect(localeFromLanguages(['zh-HK'])).toBe('zh-TW');
    expect(localeFromLanguages(['zh-CN'])).toBe('en');
    expect(localeFromLanguages(['en-US', 'zh-TW'])).toBe('en');
    expect(localeFromLanguages([])).toBe('en');
  });

  it('re-renders rendered components in the new language (messages panel, chart, toggle titles)', () => {
    resetEditorForTests();
    render(
      <ReactFlowProvider>
        <LanguageSelect />
        <BottomPanel />
      </ReactFlowProvider>,
    );
    expect(screen.getByText('Warnings, errors and run notes appear here.')).toBeTruthy();
    expect(screen.getByTestId('bottom-toggle').getAttribute('title')).toBe('Hide messages and chart');
    fireEvent.change(screen.getByTestId('language-select'), { target: { value: 'zh-TW' } });
    expect(screen.queryByText('Warnings, errors and run notes appear here.')).toBeNull();
    expect(screen.getByText('警告、錯誤與執行紀錄會顯示在這裡。')).toBeTruthy();
    expect(screen.getByText('TrainingLoop 訓練時，損失曲線會畫在這裡。')).toBeTruthy();
    expect(screen.getByTestId('bottom-toggle').getAttribute('title')).toBe('隱藏訊息與圖表');
    expect((screen.getByTestId('language-select') as HTMLSelectElement).value).toBe('zh-TW');
    act(() => setLocale('en'));
    expect(screen.getByText('Warnings, errors and run notes appear here.')).toBeTruthy();
  });

  it('shows node descriptions in the chosen language in the palette, and finds nodes by them', () => {
    resetEditorForTests();
    useCatalogue.setState({ status: 'ready', defs: defsByName, defList: nodeDefs });
    render(
      <ReactFlowProvider>
        <Palette />
      </ReactFlowProvider>,
    );
    const desc = () => screen.getByTestId('palette-item-Conv2d').querySelector('.palette-desc')?.textContent;
    expect(desc()).toBe(defsByName.Conv2d!.description);
    act(() => setLocale('zh-TW'));
    const zh = nodeTexts('zh-TW')!.Conv2d!.description!;
    expect(desc()).toBe(zh);
    expect(screen.getByTestId('palette-item-Conv2d').getAttribute('title')).toBe(zh);
    // A search in Chinese finds it by its description (the name is still Conv2d).
    const word = zh.replace(/[^\u4e00-\u9fff]/g, '').slice(0, 3);
    fireEvent.change(screen.getByTestId('palette-search'), { target: { value: word } });
    expect(screen.getByTestId('palette-item-Conv2d')).toBeTruthy();
    act(() => setLocale('en'));
    fireEvent.change(screen.getByTestId('palette-search'), { target: { value: '' } });
    expect(desc()).toBe(defsByName.Conv2d!.description);
  });
});
