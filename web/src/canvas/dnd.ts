/** The drag-and-drop type a palette item carries (its value: the node type). */
export const PALETTE_MIME = 'application/x-codefy-node';
