import type { operations } from '../../api/console.ts';

/** The shapes of the notification routes, as the generated API types give them. */
type Answer<Op extends keyof operations, Status extends number> =
  operations[Op]['responses'] extends Record<Status, { content: { 'application/json': infer J } }> ? J : never;
type Body<Op extends keyof operations> = operations[Op] extends {
  requestBody: { content: { 'application/json': infer B } };
}
  ? B
  : never;

export type Notification = Answer<'events_notifications_list', 200>['data'][number];
export type Channel = Answer<'events_notification_channels_list', 200>['data'][number];
export type ChannelKind = Channel['kind'];
/** A creation's answer: a webhook's carries its secret, this once. */
export type CreatedChannel = Answer<'events_notification_channels_create', 201>['data'];
export type NewChannel = Body<'events_notification_channels_create'>;
export type Delivery = Answer<'events_notification_channels_deliveries', 200>['data'][number];
export type Rule = Answer<'events_notification_rules_list', 200>['data'][number];
export type NewRule = Body<'events_notification_rules_create'>;
export type RuleEvent = NewRule['event'];
export type Severity = NonNullable<NewRule['severity']>;
export type Matcher = NonNullable<NewRule['matchers']>[number];
export type Step = NewRule['steps'][number];
export type MaintenanceWindow = Answer<'events_maintenance_windows_list', 200>['data'][number];
export type NewWindow = Body<'events_maintenance_windows_create'>;

export const SEVERITIES: readonly Severity[] = ['info', 'warning', 'critical'];
