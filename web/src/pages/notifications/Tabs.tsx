import { useId, useRef, type KeyboardEvent, type ReactNode } from 'react';

/**
 * Tabs as the ARIA pattern has them: one tab stop, the arrow keys (and Home, End) move between tabs and select them,
 * the panel names its tab. Only the selected panel is rendered.
 */
export function Tabs<K extends string>({
  label,
  tabs,
  selected,
  onSelect,
  children,
}: {
  label: string;
  tabs: readonly { key: K; title: string }[];
  selected: K;
  onSelect: (key: K) => void;
  children: ReactNode;
}) {
  const id = useId();
  const refs = useRef(new Map<K, HTMLButtonElement>());
  const move = (e: KeyboardEvent, index: number): void => {
    const to =
      e.key === 'ArrowRight'
        ? (index + 1) % tabs.length
        : e.key === 'ArrowLeft'
          ? (index - 1 + tabs.length) % tabs.length
          : e.key === 'Home'
            ? 0
            : e.key === 'End'
              ? tabs.length - 1
              : undefined;
    if (to === undefined) return;
    e.preventDefault();
    const key = tabs[to]!.key;
    onSelect(key);
    refs.current.get(key)?.focus();
  };
  return (
    <>
      <div className="row" role="tablist" aria-label={label}>
        {tabs.map((t, i) => (
          <button
            key={t.key}
            ref={(el) => {
              if (el) refs.current.set(t.key, el);
              else refs.current.delete(t.key);
            }}
            id={`${id}-tab-${t.key}`}
            type="button"
            role="tab"
            aria-selected={t.key === selected}
            aria-controls={`${id}-panel`}
            tabIndex={t.key === selected ? 0 : -1}
            className={t.key === selected ? '' : 'secondary'}
            onClick={() => onSelect(t.key)}
            onKeyDown={(e) => move(e, i)}
          >
            {t.title}
          </button>
        ))}
      </div>
      <div id={`${id}-panel`} role="tabpanel" aria-labelledby={`${id}-tab-${selected}`} tabIndex={0}>
        {children}
      </div>
    </>
  );
}
