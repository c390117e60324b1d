/** Values for PostgreSQL from what agents send: the runtime's, shared by every domain's jsonb writers. */
export { pgJson, pgText } from '../../../platform/stores/pg-values.ts';
