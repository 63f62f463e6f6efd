// A run's status in words, for the Runs panel and its compare view.
import { t, type MessageKey } from '../i18n';
import { HISTORY_STATUSES } from '../store/historyRows';

const KNOWN: ReadonlySet<string> = new Set(HISTORY_STATUSES);

/** A run status in words (one the editor does not know, as the server wrote it). */
export const statusText = (status: string) => (KNOWN.has(status) ? t(`runStatus.${status}` as MessageKey) : status);
