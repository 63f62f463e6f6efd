import { useEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import type { NodeDefinition } from '../api/types';
import { useT } from '../i18n';
import { useLocalizedDefList } from '../store/catalogue';
import { useDocument } from '../store/document';
import { usePanels } from '../store/panels';

const SHOWN = 12;

/** Definitions matching a search, best first: names that start with it, then names, then descriptions. */
export function rankDefinitions(defs: readonly NodeDefinition[], query: string): NodeDefinition[] {
  const q = query.trim().toLowerCase();
  if (!q) return [...defs];
  const score = (d: NodeDefinition) => {
    const name = d.node_name.toLowerCase();
    if (name.startsWith(q)) return 0;
    if (name.includes(q)) return 1;
    if (d.category.toLowerCase().includes(q)) return 2;
    if (d.description.toLowerCase().includes(q)) return 3;
    return -1;
  };
  return defs
    .map((d) => [d, score(d)] as const)
    .filter(([, s]) => s >= 0)
    .sort((a, b) => a[1] - b[1])
    .map(([d]) => d);
}

/** A search box where the canvas was double-clicked (or at the pointer, by a key): Enter adds the node there. */
export function QuickAdd() {
  const t = useT();
  const spot = usePanels((s) => s.quickAdd);
  const defs = useLocalizedDefList();
  const [query, setQuery] = useState('');
  const [index, setIndex] = useState(0);
  const input = useRef<HTMLInputElement>(null);
  const found = useMemo(() => rankDefinitions(defs, query).slice(0, SHOWN), [defs, query]);

  // Each opening starts with an empty search (set while rendering, so the old text never shows).
  const [openedAt, setOpenedAt] = useState(spot);
  if (openedAt !== spot) {
    setOpenedAt(spot);
    setQuery('');
    setIndex(0);
  }
  useEffect(() => {
    if (spot) input.current?.focus();
  }, [spot]);

  if (!spot) return null;
  const close = () => usePanels.getState().openQuickAdd(null);
  const add = (type: string) => {
    close();
    useDocument.getState().addNode(type, { x: Math.round(spot.flow.x), y: Math.round(spot.flow.y) });
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Escape') close();
    else if (e.key === 'ArrowDown') setIndex((i) => Math.min(i + 1, found.length - 1));
    else if (e.key === 'ArrowUp') setIndex((i) => Math.max(i - 1, 0));
    else if (e.key === 'Enter' && found[index]) add(found[index].node_name);
    else return;
    e.preventDefault();
  };
  // Kept inside the window, even when opened near its right or bottom edge.
  const left = Math.min(spot.screen.x, window.innerWidth - 300);
  const top = Math.min(spot.screen.y, window.innerHeight - 360);

  return (
    <div
      className="quick-add"
      data-testid="quick-add"
      role="dialog"
      aria-label={t('quickAdd.label')}
      style={{ left, top }}
      onBlur={(e) => {
        if (!e.currentTarget.contains(e.relatedTarget as Node | null)) close();
      }}
    >
      <input
        ref={input}
        type="search"
        data-testid="quick-add-input"
        placeholder={t('quickAdd.placeholder')}
        aria-label={t('quickAdd.label')}
        value={query}
        onChange={(e) => {
          setQuery(e.target.value);
          setIndex(0);
        }}
        onKeyDown={onKey}
      />
      <ul role="listbox">
        {found.length === 0 && <li className="muted">{t('quickAdd.none')}</li>}
        {found.map((d, i) => (
          <li
            key={d.node_name}
            role="option"
            aria-selected={i === index}
            className={i === index ? 'active' : ''}
            data-testid={`quick-add-item-${d.node_name}`}
            tabIndex={-1}
            onMouseEnter={() => setIndex(i)}
            onMouseDown={(e) => e.preventDefault()}
            onClick={() => add(d.node_name)}
          >
            <span className="palette-name">{d.node_name}</span>
            <span className="muted">{d.category}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}
