import { useReactFlow } from '@xyflow/react';
import { useMemo, useState, type DragEvent } from 'react';
import type { NodeDefinition } from '../api/types';
import { PALETTE_MIME } from '../canvas/dnd';
import { useT, type MessageKey } from '../i18n';
import { useCatalogue, useLocalizedDefList } from '../store/catalogue';
import { useDocument } from '../store/document';

/** The server's category names with a translation (others are shown as the server names them). */
const CATEGORY_LABEL: Record<string, MessageKey> = {
  Control: 'category.control',
  Data: 'category.data',
  Training: 'category.training',
  IO: 'category.io',
  CNN: 'category.cnn',
  Classical: 'category.classical',
  Diffusion: 'category.diffusion',
  LLM: 'category.llm',
  Normalization: 'category.normalization',
  RL: 'category.rl',
  RNN: 'category.rnn',
  'Tensor Operations': 'category.tensor_operations',
  Transformer: 'category.transformer',
  Utility: 'category.utility',
  Vision: 'category.vision',
};

/** What a training pipeline is built from, shown first; the other categories follow in the server's order. */
const PIPELINE_FIRST = ['Control', 'Data', 'Training', 'IO'];

/** Definitions grouped by category (pipeline categories first, then the server's order), filtered by a search text. */
export function groupDefinitions(defs: readonly NodeDefinition[], query: string): [string, NodeDefinition[]][] {
  const q = query.trim().toLowerCase();
  const groups = new Map<string, NodeDefinition[]>();
  for (const d of defs) {
    if (
      q &&
      !d.node_name.toLowerCase().includes(q) &&
      !d.category.toLowerCase().includes(q) &&
      !d.description.toLowerCase().includes(q)
    )
      continue;
    const list = groups.get(d.category) ?? [];
    list.push(d);
    groups.set(d.category, list);
  }
  const rank = (category: string) => {
    const i = PIPELINE_FIRST.indexOf(category);
    return i < 0 ? PIPELINE_FIRST.length : i;
  };
  return [...groups.entries()].sort(([a], [b]) => rank(a) - rank(b)); // stable: the rest keep the server's order
}

export function Palette() {
  const t = useT();
  const defs = useLocalizedDefList();
  const status = useCatalogue((s) => s.status);
  const [query, setQuery] = useState('');
  const groups = useMemo(() => groupDefinitions(defs, query), [defs, query]);
  const { screenToFlowPosition } = useReactFlow();

  const onDragStart = (e: DragEvent, type: string) => {
    e.dataTransfer.setData(PALETTE_MIME, type);
    e.dataTransfer.setData('text/plain', type);
    e.dataTransfer.effectAllowed = 'copy';
  };

  // Keyboard and double-click: the node lands in the middle of the canvas.
  const addAtCentre = (type: string) => {
    const el = document.querySelector('.canvas');
    const r = el?.getBoundingClientRect();
    const p = screenToFlowPosition(r ? { x: r.left + r.width / 2, y: r.top + r.height / 2 } : { x: 400, y: 300 });
    useDocument.getState().addNode(type, { x: Math.round(p.x - 120), y: Math.round(p.y - 40) }, true);
  };

  return (
    <aside className="palette" data-testid="palette" aria-label={t('palette.label')}>
      <input
        type="search"
        className="palette-search"
        data-testid="palette-search"
        placeholder={t('palette.search')}
        aria-label={t('palette.search')}
        value={query}
        onChange={(e) => setQuery(e.target.value)}
      />
      <div className="palette-list">
        {status === 'loading' && <p className="muted">{t('palette.loading')}</p>}
        {status === 'offline' && <p className="muted">{t('palette.offline')}</p>}
        {status === 'ready' && groups.length === 0 && <p className="muted">{t('palette.none', { query })}</p>}
        {groups.map(([category, list]) => (
          <section key={category} className="palette-group">
            <h3>{CATEGORY_LABEL[category] ? t(CATEGORY_LABEL[category]) : category}</h3>
            <ul>
              {list.map((d) => (
                <li
                  key={d.node_name}
                  className="palette-item"
                  data-testid={`palette-item-${d.node_name}`}
                  draggable
                  tabIndex={0}
                  title={d.description}
                  onDragStart={(e) => onDragStart(e, d.node_name)}
                  onDoubleClick={() => addAtCentre(d.node_name)}
                  onKeyDown={(e) => {
                    if (e.key === 'Enter') addAtCentre(d.node_name);
                  }}
                >
                  <span className="palette-name">{d.node_name}</span>
                  <span className="palette-desc">{d.description}</span>
                </li>
              ))}
            </ul>
          </section>
        ))}
      </div>
      <p className="palette-hint muted">{t('palette.hint')}</p>
    </aside>
  );
}
