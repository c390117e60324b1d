/** What the events domain offers code outside it: its secret box's key check, for the start-up's checks. */
export { eventsSecretBox } from './secret-box.ts';
