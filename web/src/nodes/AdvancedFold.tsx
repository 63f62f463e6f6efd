import { useState, type ReactNode } from 'react';
import { useT } from '../i18n';

/** The Advanced params of a node, folded until opened (on the node and in the side panel alike). */
export function AdvancedFold(props: { count: number; testId: string; className?: string; children: ReactNode }) {
  const t = useT();
  const [open, setOpen] = useState(false);
  if (props.count === 0) return null;
  return (
    <>
      <button
        type="button"
        className={`advanced-toggle${props.className ? ` ${props.className}` : ''}`}
        aria-expanded={open}
        data-testid={props.testId}
        onClick={() => setOpen((o) => !o)}
      >
        {open ? '▾' : '▸'} {t('node.advanced', { count: props.count })}
      </button>
      {open && props.children}
    </>
  );
}
