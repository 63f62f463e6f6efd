// Node ids the editor makes: readable (the type's name in snake case and a
// number), never one the graph already has.

export function uniqueId(base: string, taken: (id: string) => boolean): string {
  const stem = base.replace(/^preset:/, '').replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '').toLowerCase() || 'node';
  for (let i = 1; ; i++) {
    const id = `${stem}_${i}`;
    if (!taken(id)) return id;
  }
}
