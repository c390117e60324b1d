/**
 * What the invoice domain offers code outside it: the analytics store (its opener, for the migration command and
 * tests) and its DDL. Everything else is reached through the invoice subjects.
 */
export { analyticsStore } from './analytics/open.ts';
export { migrateAnalytics } from './analytics/migrations/runner.ts';
export { openAnalytics, type AnalyticsStore } from './analytics/store.ts';
export { AnalyticsOwnershipError, usesEmbeddedAnalytics } from './analytics/owner.ts';
